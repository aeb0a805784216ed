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
    /// The calls arriving in each second from the flood's last five to the window's end, so a slow tail right after
    /// the flood (its backlog) can be told from a few slow calls scattered over the window (the p99's noise).
    var timeline: [Second]

    /// The calls arriving in one second.
    struct Second: Codable {
        /// Its start, seconds from the flood's end (negative: during the flood).
        var start: Int
        var calls: Int
        var refused: Int
        var p50: Double
        var max: Double
        /// Calls slower than the threshold (refused ones included).
        var late: Int
    }

    init(results: [WorkloadResult], floodEnd: Double, threshold: Double) {
        var byCall: [Int: [WorkloadResult]] = [:]
        for r in results where r.arrival >= floodEnd - 5 { byCall[r.call, default: []].append(r) }
        // Each call's arrival and its latency (its slowest request; infinite if any was refused or failed).
        let around = byCall.values.map { call -> (arrival: Double, latency: Double) in
            (call[0].arrival - floodEnd, call.contains { $0.status != 200 } ? .infinity : call.map(\.latency.seconds).max() ?? 0)
        }.sorted { $0.arrival < $1.arrival }
        timeline = Dictionary(grouping: around) { Int($0.arrival.rounded(.down)) }.sorted { $0.key < $1.key }.map { start, calls in
            let latencies = calls.map(\.latency)
            return Second(start: start, calls: calls.count, refused: latencies.filter(\.isInfinite).count,
                          p50: BenchReport.percentile(latencies, 0.5), max: latencies.max() ?? 0,
                          late: latencies.filter { $0 > threshold }.count)
        }
        let after = around.filter { $0.arrival >= 0 }
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
