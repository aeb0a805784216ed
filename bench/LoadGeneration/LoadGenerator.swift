import Dataset
import LookupClient
import Foundation
import LookupProtocol
import PIR
import Synchronization

/// Drives a Live Caller ID Lookup server with simulated phones (SPEC-PIR §7.0): each phone has its own keys
/// (uploaded first), then looks up random present and absent numbers as an incoming call does, the block use
/// case and then the identity use case, and checks every decrypted answer against the truth.
public struct LoadGenerator: Sendable {
    /// How load is offered.
    public enum Mode: Sendable, Codable, Equatable {
        /// Each phone starts its next lookup when the previous one ends.
        case closed
        /// Lookups arrive at a fixed rate (per second) whatever the server does; latency counts from the arrival.
        case open(rate: Double)
    }

    /// What the answers must be.
    public struct Truth: Sendable {
        /// Present numbers with their block value and identity value (nil when the number has no identity row).
        public var present: [(number: String, block: [UInt8], identity: [UInt8]?)]
        /// Numbers in neither database.
        public var absent: [String]
        /// A second acceptable answer for numbers a reload changes while the load runs (block and identity value,
        /// nil when absent): the server may answer the old or the new value until the reload has converged.
        public var alternatives: [String: (block: [UInt8]?, identity: [UInt8]?)]
        /// Whether the change has converged: asked when a lookup starts; from then on only the alternative is
        /// right for the changed numbers.
        public var converged: @Sendable () -> Bool

        /// The truth.
        public init(present: [(number: String, block: [UInt8], identity: [UInt8]?)], absent: [String],
                    alternatives: [String: (block: [UInt8]?, identity: [UInt8]?)] = [:],
                    converged: @escaping @Sendable () -> Bool = { false }) {
            self.present = present
            self.absent = absent
            self.alternatives = alternatives
            self.converged = converged
            changedRows = alternatives.isEmpty ? [] : present.indices.filter { alternatives[present[$0].number] != nil }
        }

        /// The truth of identity records: each number's block value and identity value, as the databases built
        /// from them answer.
        public init(records: [IdentityRecord], absent: [String], alternatives: [String: (block: [UInt8]?, identity: [UInt8]?)] = [:],
                    converged: @escaping @Sendable () -> Bool = { false }) throws {
            self.init(present: try records.map { ($0.number, $0.blockValue, try $0.callIdentity()) }, absent: absent,
                      alternatives: alternatives, converged: converged)
        }

        /// Indices of present rows with an alternative: a tenth of the lookups go to them, so a change is
        /// checked often before, during and after it converges.
        let changedRows: [Int]

        /// Whether `answer` is right for `number`, expected to be `expected`; `converged` tells whether the lookup
        /// started after the change converged.
        func accepts(_ answer: (block: [UInt8]?, identity: [UInt8]?), for number: String,
                     expected: (block: [UInt8]?, identity: [UInt8]?), converged: Bool) -> Bool {
            guard let other = alternatives[number] else { return answer.block == expected.block && answer.identity == expected.identity }
            if answer.block == other.block, answer.identity == other.identity { return true }
            return !converged && answer.block == expected.block && answer.identity == expected.identity
        }
    }

    /// What a phone does when the server cannot answer now, as a device retries.
    public struct RetryPolicy: Sendable {
        /// Retries of one request answered 503/429 with `Retry-After` (0: the first failure counts as an error).
        public var retries: Int
        /// Longest wait honoured, in seconds (a longer `Retry-After` is capped to this).
        public var maxWaitSeconds: Int
        /// Seconds between a phone's config syncs (nil: only at setup and after a 410).
        public var configRefreshSeconds: Double?

        /// A policy.
        public init(retries: Int = 0, maxWaitSeconds: Int = 5, configRefreshSeconds: Double? = nil) {
            self.retries = max(retries, 0)
            self.maxWaitSeconds = max(maxWaitSeconds, 0)
            self.configRefreshSeconds = configRefreshSeconds
        }
    }

    /// The outcome of a run.
    public struct Result: Sendable, Codable {
        /// Lookups completed (each = one block and one identity request).
        public var lookups = 0
        /// Answers that differed from the truth.
        public var mismatches = 0
        /// Requests that failed (after retries).
        public var errors = 0
        /// Answers 503/429 with `Retry-After`, each retried.
        public var unavailable = 0
        /// Answers 503/429 without a usable `Retry-After` (counted as errors too).
        public var unavailableWithoutRetryAfter = 0
        /// Requests that failed with 503/429 at first and succeeded when retried.
        public var retriedSucceeded = 0
        /// 410 answers (config id no longer served), after which the phone synced its config and retried.
        public var configRefreshes = 0
        /// First few problems, for the report.
        public var problems: [String] = []
        /// Per-request HTTP latency (seconds) of block and identity queries.
        public var blockLatencies: [Double] = []
        public var identityLatencies: [Double] = []
        /// Whole-lookup latency from arrival (open loop) or start (closed loop) to both answers decrypted.
        public var lookupLatencies: [Double] = []
        /// Wall time of the measured phase.
        public var seconds = 0.0
        /// Bytes sent and received for queries (all phones).
        public var queryBytesUp = 0, queryBytesDown = 0
        /// Size of one evaluation-key upload body per use case.
        public var keyUploadBytes = 0
        /// Setup time: config sync and key uploads of all phones.
        public var setupSeconds = 0.0
        /// Of `errors`: requests that got no HTTP answer (connection refused or lost, timeout).
        public var connectionErrors = 0
        /// Measured lookups by front door (with several URLs).
        public var targets: [String: TargetResult] = [:]
    }

    /// The measured lookups of the phones of one front door.
    public struct TargetResult: Sendable, Codable {
        /// Lookups answered, wrong answers, failed lookups, and of those the ones without an HTTP answer.
        public var lookups = 0, mismatches = 0, errors = 0, connectionErrors = 0
    }

    /// Server URLs (front doors). With several, phone `i` lives at `urls[i % n]` (tokens, lookups) but syncs its
    /// config and uploads its key at setup through the next one, `urls[(i + 1) % n]`: keys must follow a device
    /// across coordinators.
    public let urls: [String]
    /// The first server URL.
    public var url: String { urls[0] }
    /// Use cases.
    public let blockUseCase: String, identityUseCase: String
    /// Phones and their user token (nil: no Privacy Pass).
    public let phones: Int
    public let userToken: String?
    /// Fraction of lookups for present numbers.
    public let presentFraction: Double
    /// Retries and config refreshes.
    public let retry: RetryPolicy

    /// A generator.
    public init(url: String, blockUseCase: String, identityUseCase: String, phones: Int, userToken: String?, presentFraction: Double = 0.8,
                retry: RetryPolicy = RetryPolicy()) {
        self.init(urls: [url], blockUseCase: blockUseCase, identityUseCase: identityUseCase, phones: phones, userToken: userToken,
                  presentFraction: presentFraction, retry: retry)
    }

    /// A generator over several front doors (at least one URL).
    public init(urls: [String], blockUseCase: String, identityUseCase: String, phones: Int, userToken: String?, presentFraction: Double = 0.8,
                retry: RetryPolicy = RetryPolicy()) {
        precondition(!urls.isEmpty, "a load generator needs a URL")
        self.urls = urls
        self.blockUseCase = blockUseCase
        self.identityUseCase = identityUseCase
        self.phones = max(phones, 1)
        self.userToken = userToken
        self.presentFraction = presentFraction
        self.retry = retry
    }

    /// Sets the phones up (config, keys) and warms them, calls `measuring`, then offers load for `duration`;
    /// `progress` gets a status line now and then.
    public func run(mode: Mode, duration: Duration, truth: Truth, seed: UInt64 = 1,
                    measuring: @Sendable () -> Void = {},
                    progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Result {
        let clients = urls.map { LookupHTTPClient(baseURL: $0) }
        let devices = (0..<phones).map { i -> LookupDevice in
            let home = clients[i % clients.count]
            let auth: any AuthorizationProvider = userToken.map { PrivacyPassAuthorization(issuer: home, userToken: $0, batch: 8) } ?? NoAuthorization()
            return LookupDevice(http: clients[(i + 1) % clients.count], userIdentifier: "bench-phone-\(seed)-\(i)", authorization: auth)
        }
        let setupStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, device) in devices.enumerated() {
                group.addTask {
                    try await device.syncConfig([blockUseCase, identityUseCase])
                    await device.route(to: clients[i % clients.count])
                }
            }
            try await group.waitForAll()
        }
        // Warm-up, not measured: two lookups per phone (connections, tokens, the server's key caches).
        let warmup = ResultBox(Result())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, device) in devices.enumerated() {
                group.addTask {
                    var rng = SplitMix64(seed: seed &+ 0xABCD &+ UInt64(i))
                    for _ in 0..<2 { await lookup(device, truth: truth, rng: &rng, arrival: .now, into: warmup) }
                }
            }
            try await group.waitForAll()
        }
        var result = Result()
        result.setupSeconds = seconds(ContinuousClock.now - setupStart)
        let warm = warmup.state.withLock { $0 }
        result.mismatches = warm.mismatches
        result.errors = warm.errors
        result.connectionErrors = warm.connectionErrors
        result.problems = warm.problems
        result.unavailable = warm.unavailable
        result.unavailableWithoutRetryAfter = warm.unavailableWithoutRetryAfter
        result.retriedSucceeded = warm.retriedSucceeded
        result.configRefreshes = warm.configRefreshes
        result.keyUploadBytes = await devices[0].lastKeyUploadBytes
        let sentBefore = await devices.asyncSum { await $0.bytesSent }
        let receivedBefore = await devices.asyncSum { await $0.bytesReceived }
        let shared = ResultBox(result)
        measuring()
        let start = ContinuousClock.now
        let deadline = start + duration
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(2))
                let r = shared.state.withLock { $0 }
                let elapsed = seconds(ContinuousClock.now - start)
                progress(String(format: "%.0f s: %d lookups (%.2f/s), %d mismatches, %d errors, %d unavailable (retried)", elapsed, r.lookups,
                                Double(r.lookups) / max(elapsed, 0.001), r.mismatches, r.errors, r.unavailable))
            }
        }
        defer { ticker.cancel() }
        switch mode {
        case .closed:
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (i, device) in devices.enumerated() {
                    group.addTask {
                        var rng = SplitMix64(seed: seed &* 1000 &+ UInt64(i))
                        while ContinuousClock.now < deadline {
                            // A phone whose lookup failed waits a moment, as a phone would, instead of spinning on
                            // a front door that refuses connections.
                            if !(await lookup(device, truth: truth, rng: &rng, arrival: .now, into: shared)) {
                                try? await Task.sleep(for: .milliseconds(200))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        case .open(let rate):
            let idle = DevicePool(devices, seed: seed)
            try await withThrowingTaskGroup(of: Void.self) { group in
                var index = 0
                while true {
                    let arrival = start + .nanoseconds(Int64(Double(index) / rate * 1e9))
                    guard arrival < deadline else { break }
                    try await Task.sleep(until: arrival)
                    let i = index
                    group.addTask {
                        let device = await idle.take()
                        var rng = SplitMix64(seed: seed &* 7919 &+ UInt64(i))
                        await lookup(device, truth: truth, rng: &rng, arrival: arrival, into: shared)
                        await idle.put(device)
                    }
                    index += 1
                }
                try await group.waitForAll()
            }
        }
        var final = shared.state.withLock { $0 }
        final.seconds = seconds(ContinuousClock.now - start)
        final.queryBytesUp = await devices.asyncSum { await $0.bytesSent } - sentBefore
        final.queryBytesDown = await devices.asyncSum { await $0.bytesReceived } - receivedBefore
        return final
    }

    /// One lookup (block and identity) with its answers checked; false when it failed.
    @discardableResult
    private func lookup(_ device: LookupDevice, truth: Truth, rng: inout SplitMix64, arrival: ContinuousClock.Instant,
                        into shared: ResultBox) async -> Bool {
        let present = truth.absent.isEmpty || Double(rng.next() % 10_000) / 10_000 < presentFraction
        let number: String
        let expected: (block: [UInt8]?, identity: [UInt8]?)
        if !truth.changedRows.isEmpty, rng.next() % 10 == 0 {
            let row = truth.present[truth.changedRows[Int(rng.next() % UInt64(truth.changedRows.count))]]
            (number, expected) = (row.number, (row.block, row.identity))
        } else if present, !truth.present.isEmpty {
            let row = truth.present[Int(rng.next() % UInt64(truth.present.count))]
            (number, expected) = (row.number, (row.block, row.identity))
        } else {
            (number, expected) = (truth.absent[Int(rng.next() % UInt64(truth.absent.count))], (nil, nil))
        }
        let keyword = Array(number.utf8)
        let converged = truth.alternatives.isEmpty ? false : truth.converged()
        let target = await device.http.baseURL
        do {
            if let refresh = retry.configRefreshSeconds, let last = await device.lastConfigSync,
               ContinuousClock.now - last > .milliseconds(Int(refresh * 1000)) {
                try await device.syncConfig([blockUseCase, identityUseCase])
            }
            let (block, blockLatency) = try await request(device, keyword, in: blockUseCase, shared: shared)
            let (identity, identityLatency) = try await request(device, keyword, in: identityUseCase, shared: shared)
            let total = seconds(ContinuousClock.now - arrival)
            shared.state.withLock { r in
                r.lookups += 1
                r.targets[target, default: TargetResult()].lookups += 1
                r.blockLatencies.append(blockLatency)
                r.identityLatencies.append(identityLatency)
                r.lookupLatencies.append(total)
                if !truth.accepts((block, identity), for: number, expected: expected, converged: converged) {
                    r.mismatches += 1
                    r.targets[target, default: TargetResult()].mismatches += 1
                    if r.problems.count < 10 { r.problems.append("wrong answer for \(number) at \(target)") }
                }
            }
        } catch {
            // An error that is not the server's answer (LookupClientError) never got one: the connection failed.
            let connection = !(error is LookupClientError)
            shared.state.withLock { r in
                r.errors += 1
                r.targets[target, default: TargetResult()].errors += 1
                if connection {
                    r.connectionErrors += 1
                    r.targets[target, default: TargetResult()].connectionErrors += 1
                }
                if r.problems.count < 10 { r.problems.append("\(number) at \(target): \(error)") }
            }
            return false
        }
        return true
    }

    /// One query with the retry policy: 503/429 with `Retry-After` is retried after that many seconds, 410 syncs
    /// the config and retries; the value and the latency of the exchange that answered.
    private func request(_ device: LookupDevice, _ keyword: [UInt8], in useCase: String, shared: ResultBox) async throws
        -> ([UInt8]?, Double) {
        var failedUnavailable = false
        var attempt = 0
        while true {
            do {
                let value = try await device.lookup(keyword, in: useCase)
                if failedUnavailable { shared.state.withLock { $0.retriedSucceeded += 1 } }
                return (value, seconds(await device.lastExchange))
            } catch let error as LookupClientError where error.code == .unavailable {
                guard let retryAfter = error.retryAfter else {
                    shared.state.withLock { $0.unavailableWithoutRetryAfter += 1 }
                    throw error
                }
                shared.state.withLock { $0.unavailable += 1 }
                failedUnavailable = true
                guard attempt < retry.retries else { throw error }
                try await Task.sleep(for: .seconds(min(retryAfter, retry.maxWaitSeconds)))
            } catch let error as LookupClientError where error.code == .http && error.status == 410 {
                shared.state.withLock { $0.configRefreshes += 1 }
                guard attempt < max(retry.retries, 1) else { throw error }
                try await device.syncConfig([useCase])
            }
            attempt += 1
        }
    }
}

/// The result being filled by concurrent lookups.
final class ResultBox: Sendable {
    let state: Mutex<LoadGenerator.Result>
    init(_ initial: LoadGenerator.Result) { state = Mutex(initial) }
}

/// The phones not busy with a lookup. An open-loop arrival takes one of them at random (seeded), so that the calls
/// spread over the whole population as they do over a provider's phones (a stack would hand the same few phones
/// every call and make any key cache look perfect).
actor DevicePool {
    private var idle: [LookupDevice]
    private var waiters: [CheckedContinuation<LookupDevice, Never>] = []
    private var rng: SplitMix64
    init(_ devices: [LookupDevice], seed: UInt64) {
        idle = devices
        rng = SplitMix64(seed: seed ^ 0x5DEE_CE66)
    }
    func take() async -> LookupDevice {
        if !idle.isEmpty {
            idle.swapAt(Int.random(in: 0..<idle.count, using: &rng), idle.count - 1)
            return idle.removeLast()
        }
        return await withCheckedContinuation { waiters.append($0) }
    }
    func put(_ device: LookupDevice) {
        if waiters.isEmpty { idle.append(device) } else { waiters.removeFirst().resume(returning: device) }
    }
}

func seconds(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) + Double(atto) / 1e18
}

extension Array where Element == LookupDevice {
    func asyncSum(_ value: (LookupDevice) async -> Int) async -> Int {
        var total = 0
        for device in self { total += await value(device) }
        return total
    }
}
