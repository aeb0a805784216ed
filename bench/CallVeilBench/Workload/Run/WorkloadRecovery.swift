import Foundation

/// How soon calls were answered in time again after a flood: the calls arriving after its end, and the first moment
/// from which the calls arriving were answered at the threshold's p99 (the 70%-load p99, say) or better.
struct WorkloadRecovery: Codable {
    var calls: Int
    var refused: Int
    var p99: Double
    var threshold: Double
    /// Seconds after the flood's end (in steps of 0.1 s) from which the p99 of the calls arriving, a refused call
    /// counting as infinitely late, is within the threshold; nil if never within the window.
    var recoveredAfter: Double?

    init(results: [WorkloadResult], floodEnd: Double, threshold: Double) {
        var byCall: [Int: [WorkloadResult]] = [:]
        for r in results where r.arrival >= floodEnd { byCall[r.call, default: []].append(r) }
        // Each call's arrival and its latency (its slowest request; infinite if any was refused or failed).
        let after = byCall.values.map { call -> (arrival: Double, latency: Double) in
            (call[0].arrival - floodEnd, call.contains { $0.status != 200 } ? .infinity : call.map(\.latency.seconds).max() ?? 0)
        }.sorted { $0.arrival < $1.arrival }
        calls = after.count
        refused = after.filter { $0.latency.isInfinite }.count
        p99 = BenchReport.percentile(after.map(\.latency), 0.99)
        self.threshold = threshold
        recoveredAfter = nil
        var t = 0.0
        var rest = after[...]
        // At least 20 calls left to judge a p99 by.
        while rest.count >= 20 {
            if BenchReport.percentile(rest.map(\.latency), 0.99) <= threshold {
                recoveredAfter = t
                break
            }
            t += 0.1
            rest = rest.drop { $0.arrival < t }
        }
    }
}
