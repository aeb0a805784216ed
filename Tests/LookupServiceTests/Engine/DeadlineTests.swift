import Foundation
import LookupEngine

@testable import LookupService
import ServiceTestSupport
import Synchronization
import Testing

/// `Deadline.run`: the caller is answered at the deadline or on cancellation even when the work ignores
/// cancellation, and a result that comes too late is handed over for clean-up. The work here waits on a gate
/// the test opens only after the caller has its answer, so an implementation that waited for the work would
/// not return before the gate's fallback (60 s) and fails; no assertion depends on how busy the machine is.
@Suite("Deadline")
struct DeadlineTests {
    struct Expired: Error {}

    /// Work that ignores cancellation: it ends when the gate opens, whatever happens to its task.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        init(fallback: Duration = .seconds(60)) {
            Task { [weak self] in
                try? await Task.sleep(for: fallback)
                self?.open()
            }
        }

        var isOpen: Bool { state.withLock { $0.open } }

        func wait() async {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { s -> Bool in
                    if s.open { return true }
                    s.waiters.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                s.open = true
                defer { s.waiters = [] }
                return s.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    @Test("In time: the work's value; its error as it is")
    func inTime() async throws {
        let value = try await Deadline.run(.seconds(60), expired: { Expired() }) { 7 }
        #expect(value == 7)
        struct Failed: Error {}
        await #expect(throws: Failed.self) {
            try await Deadline.run(.seconds(60), expired: { Expired() }) { () async throws -> Int in throw Failed() }
        }
    }

    @Test("Past the deadline: expired while the work still runs, not before the deadline; the work is cancelled and its late value goes to discard")
    func expires() async throws {
        let gate = Gate()
        let discarded = Atomic(0)
        let workSawCancellation = Atomic(false)
        let start = ContinuousClock.now
        await #expect(throws: Expired.self) {
            try await Deadline.run(.milliseconds(200), expired: { Expired() }, discard: { discarded.store($0, ordering: .sequentiallyConsistent) }) {
                await gate.wait()
                workSawCancellation.store(Task.isCancelled, ordering: .sequentiallyConsistent)
                return 9
            }
        }
        #expect(ContinuousClock.now - start >= .milliseconds(200))
        #expect(!gate.isOpen, "the caller was answered only when the work ended")
        #expect(discarded.load(ordering: .sequentiallyConsistent) == 0)
        gate.open()
        let late = try await timeUntil(within: .seconds(60)) { discarded.load(ordering: .sequentiallyConsistent) == 9 }
        #expect(late != nil, "the late value was not discarded")
        let cancelled = workSawCancellation.load(ordering: .sequentiallyConsistent)
        #expect(cancelled, "the work given up on was not cancelled")
    }

    @Test("Cancelling the caller answers with CancellationError while the work still runs, cancelled before or during the wait")
    func cancellation() async throws {
        let gate = Gate()
        let waiting = Task {
            try await Deadline.run(.seconds(600), expired: { Expired() }) { await gate.wait(); return 1 }
        }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(!gate.isOpen, "the cancelled caller was answered only when the work ended")

        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await Deadline.run(.seconds(600), expired: { Expired() }) { await gate.wait(); return 1 }
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
        #expect(!gate.isOpen)
        gate.open()
    }
}
