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
    /// The p99 of the calls arriving `settle` seconds after the flood's end or later.
    var settle: Double
    var p99Settled: Double
    /// The load run's own p99 over windows as long as the settled part of this one, one after another: a p99 of a
    /// few hundred calls moves by tens of milliseconds between windows of the same load, so the settled p99 is
    /// judged against the highest of them (the load's own variation) as well as against the whole run's p99.
    var baselineWindowP99s: [Double]

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

    /// Each call's arrival and its latency (its slowest request; infinite if any was refused or failed), in order of
    /// arrival, of the results arriving at `from` or later.
    static func calls(_ results: [WorkloadResult], from: Double = -.infinity) -> [(arrival: Double, latency: Double)] {
        var byCall: [Int: [WorkloadResult]] = [:]
        for r in results where r.arrival >= from { byCall[r.call, default: []].append(r) }
        return byCall.values.map { call -> (arrival: Double, latency: Double) in
            (call[0].arrival, call.contains { $0.status != 200 } ? .infinity : call.map(\.latency.seconds).max() ?? 0)
        }.sorted { $0.arrival < $1.arrival }
    }

    /// The recovery of `results` (a flood ending at `floodEnd`, then the window after it) against `threshold`, and
    /// against `baseline` (the load run's results) over windows of the settled part's length.
    init(results: [WorkloadResult], floodEnd: Double, threshold: Double, settle: Double = 2, baseline: [WorkloadResult] = []) {
        let around = Self.calls(results, from: floodEnd - 5).map { (arrival: $0.arrival - floodEnd, latency: $0.latency) }
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
        self.settle = settle
        let settled = after.filter { $0.arrival >= settle }
        p99Settled = BenchReport.percentile(settled.map(\.latency), 0.99)
        let length = (after.last?.arrival ?? settle) - settle
        baselineWindowP99s = []
        let load = Self.calls(baseline)
        if length >= 1, let first = load.first?.arrival, let last = load.last?.arrival {
            var start = first
            while start + length <= last {
                let window = load.filter { $0.arrival >= start && $0.arrival < start + length }.map(\.latency)
                if window.count >= 20 { baselineWindowP99s.append(BenchReport.percentile(window, 0.99)) }
                start += length
            }
        }
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
