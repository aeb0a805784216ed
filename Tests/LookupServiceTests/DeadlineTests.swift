import Foundation
import ServiceTestSupport
@testable import LookupService
import Synchronization
import Testing

/// `Deadline.run`: the caller is answered at the deadline or on cancellation even when the work ignores
/// cancellation, and a result that comes too late is handed over for clean-up.
@Suite("Deadline")
struct DeadlineTests {
    struct Expired: Error {}

    /// Work that ignores cancellation: returns `value` after `delay` whatever happens to its task.
    static func stubborn(_ value: Int, after delay: Duration) async -> Int {
        await withCheckedContinuation { continuation in
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { continuation.resume(returning: value) }
        }
    }

    @Test("In time: the work's value; its error as it is")
    func inTime() async throws {
        let value = try await Deadline.run(.seconds(5), expired: { Expired() }) { await Self.stubborn(7, after: .milliseconds(10)) }
        #expect(value == 7)
        struct Failed: Error {}
        await #expect(throws: Failed.self) {
            try await Deadline.run(.seconds(5), expired: { Expired() }) { () async throws -> Int in throw Failed() }
        }
    }

    @Test("Past the deadline: expired at the deadline, not when the work ends; the late value goes to discard")
    func expires() async throws {
        let discarded = Atomic(0)
        let start = ContinuousClock.now
        await #expect(throws: Expired.self) {
            try await Deadline.run(.milliseconds(200), expired: { Expired() }, discard: { discarded.store($0, ordering: .sequentiallyConsistent) }) {
                await Self.stubborn(9, after: .seconds(2))
            }
        }
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(200) && waited < .seconds(1), "answered after \(waited)")
        #expect(discarded.load(ordering: .sequentiallyConsistent) == 0)
        let late = try await timeUntil(within: .seconds(5)) { discarded.load(ordering: .sequentiallyConsistent) == 9 }
        #expect(late != nil, "the late value was not discarded")
    }

    @Test("Cancelling the caller answers at once with CancellationError, before or during the wait")
    func cancellation() async throws {
        let start = ContinuousClock.now
        let waiting = Task {
            try await Deadline.run(.seconds(10), expired: { Expired() }) { await Self.stubborn(1, after: .seconds(2)) }
        }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(ContinuousClock.now - start < .seconds(1))

        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await Deadline.run(.seconds(10), expired: { Expired() }) { await Self.stubborn(1, after: .seconds(2)) }
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
        #expect(ContinuousClock.now - start < .seconds(1))
    }
}
