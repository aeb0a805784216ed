import Synchronization

/// Bounds how many shard loads (rebuilding an evaluation form, writing or mapping a scan file) a worker runs at
/// once. Without it every finished transfer started its rebuild at once on Dispatch threads (which multiply while
/// others wait on disk), holding several shards' evaluation forms in memory together and starving the worker's
/// heartbeat of CPU. Waiters are served in arrival order.
final class LoadGate: Sendable {
    private struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// Loads allowed at once.
    let limit: Int

    /// A gate admitting `limit` (at least 1) loads at a time.
    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Waits for a turn.
    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                guard s.running < limit else {
                    s.waiting.append(continuation)
                    return false
                }
                s.running += 1
                return true
            }
            if now { continuation.resume() }
        }
    }

    /// Ends a turn, handing it to the longest waiter.
    func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard !s.waiting.isEmpty else {
                s.running -= 1
                return nil
            }
            return s.waiting.removeFirst()
        }
        next?.resume()
    }
}
