import Foundation
import LoadGeneration
import LookupClient
import PIR
import Synchronization

/// The well-behaved phone of the overload run: one device looking numbers up one after another as incoming calls
/// do (block, then identity), honouring `Retry-After`, and checking every decrypted answer against the truth.
final class OverloadPhone: Sendable {
    /// One lookup: when it started (seconds since the run's start), how long both answers took, retries it needed.
    struct Lookup: Sendable, Codable {
        var start: Double
        var latency: Double
        var retries: Int
        /// Of the latency, seconds spent getting Privacy Pass tokens (`/issue` when the batch ran out).
        var tokenSeconds: Double
    }

    let device: LookupDevice
    let clock: TimedAuthorization?
    let truth: LoadGenerator.Truth
    let block: String, identity: String
    let tally = StatusTally()
    private let lookups = Mutex<[Lookup]>([])
    private let wrong = Mutex<[String]>([])
    private let failed = Mutex(0)

    init(device: LookupDevice, clock: TimedAuthorization? = nil, truth: LoadGenerator.Truth, block: String, identity: String) {
        self.device = device
        self.clock = clock
        self.truth = truth
        self.block = block
        self.identity = identity
    }

    /// Lookups so far.
    var completed: [Lookup] { lookups.withLock { $0 } }
    /// Answers that decrypted to the wrong value.
    var wrongAnswers: [String] { wrong.withLock { $0 } }
    /// Lookups that failed for good (not retryable, or still refused after 10 retries).
    var failures: Int { failed.withLock { $0 } }

    /// Looks numbers up until `stop` says so; times count from `origin`.
    func run(origin: ContinuousClock.Instant, seed: UInt64, stop: @Sendable () -> Bool) async {
        var rng = SplitMix64(seed: seed)
        while !stop() {
            let present = rng.next() % 5 != 0 || truth.absent.isEmpty
            let (number, expectedBlock, expectedIdentity): (String, [UInt8]?, [UInt8]?)
            if present {
                let row = truth.present[Int(rng.next() % UInt64(truth.present.count))]
                (number, expectedBlock, expectedIdentity) = (row.number, row.block, row.identity)
            } else {
                (number, expectedBlock, expectedIdentity) = (truth.absent[Int(rng.next() % UInt64(truth.absent.count))], nil, nil)
            }
            let start = ContinuousClock.now
            let tokenBefore = clock?.seconds ?? 0
            var retries = 0
            do {
                let blockValue = try await answer(number, in: block, retries: &retries)
                let identityValue = try await answer(number, in: identity, retries: &retries)
                if blockValue != expectedBlock || identityValue != expectedIdentity {
                    wrong.withLock { $0.append(number) }
                }
                let latency = ContinuousClock.now - start
                lookups.withLock {
                    $0.append(Lookup(start: (start - origin).seconds, latency: latency.seconds, retries: retries,
                                     tokenSeconds: (clock?.seconds ?? 0) - tokenBefore))
                }
            } catch {
                failed.withLock { $0 += 1 }
            }
        }
    }

    private func answer(_ number: String, in useCase: String, retries: inout Int) async throws -> [UInt8]? {
        while true {
            do {
                let value = try await device.lookup(Array(number.utf8), in: useCase)
                tally.add(error: nil)
                return value
            } catch let error as LookupClientError where error.code == .unavailable && error.retryAfter != nil {
                tally.add(error: error)
                guard retries < 10 else { throw error }
                retries += 1
                try await Task.sleep(for: .seconds(min(max(error.retryAfter ?? 1, 1), 5)))
            } catch {
                tally.add(error: error)
                throw error
            }
        }
    }
}

extension OverloadPhone {
    /// What the phone measured, as its process reports it to `callveil-bench overload`.
    struct Report: Codable {
        var lookups: [Lookup]
        var outcomes: [String: Int]
        var wrongAnswers: [String]
        var failures: Int
    }

    /// The phone's measurements so far.
    var report: Report { Report(lookups: completed, outcomes: tally.snapshot, wrongAnswers: wrongAnswers, failures: failures) }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
