import Foundation
import Synchronization

/// Collects a replay's results from its concurrent calls, and how late the tool placed calls.
final class WorkloadRecorder: Sendable {
    private let state = Mutex((results: [WorkloadResult](), highest: -1, lag: [Double]()))

    func add(_ result: WorkloadResult) { state.withLock { $0.results.append(result) } }

    func placed(_ call: Int) { state.withLock { $0.highest = max($0.highest, call) } }

    func noteLag(_ lag: Duration) { state.withLock { $0.lag.append(lag.seconds) } }

    var results: [WorkloadResult] { state.withLock { $0.results } }

    /// Calls placed (they are placed in order, so the next unused one is this index).
    var callsPlaced: Int { state.withLock { $0.highest + 1 } }

    /// How late the tool placed calls after their arrival time (p99, seconds): the tool's own lag, not the server's.
    var lagP99: Double { state.withLock { BenchReport.percentile($0.lag, 0.99) } }
}
