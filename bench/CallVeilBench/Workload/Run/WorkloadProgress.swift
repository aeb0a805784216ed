import Foundation
import Synchronization

/// Progress of a long preparation step on standard error: done of total, rate and time left, at most every 2 s.
final class WorkloadProgress: Sendable {
    private let label: String
    private let total: Int
    private let started = ContinuousClock.now
    private let state = Mutex((done: 0, printed: ContinuousClock.now))

    init(label: String, total: Int) {
        self.label = label
        self.total = total
    }

    func advance() {
        let line: String? = state.withLock { s in
            s.done += 1
            guard ContinuousClock.now - s.printed >= .seconds(2) else { return nil }
            s.printed = .now
            return describe(s.done)
        }
        if let line { writeStderr(line) }
    }

    func finish() {
        writeStderr(describe(state.withLock { $0.done }))
    }

    private func describe(_ done: Int) -> String {
        let elapsed = (ContinuousClock.now - started).seconds
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let left = rate > 0 ? Double(total - done) / rate : 0
        return String(format: "%@: %d/%d (%.1f/s, %.0f s left)\n", label, done, total, rate, left)
    }
}
