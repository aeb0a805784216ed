import Foundation

/// What a replay measured, as JSON (`results-NAME.json`) and as a markdown table.
struct WorkloadSummary: Codable {
    var label: String
    var calls: Int
    var seconds: Double
    var requests: Int
    var answered: Int
    var refusedWithRetryAfter: Int
    var refusedWithoutRetryAfter: Int
    var otherErrors: Int
    var transportErrors: Int
    var statuses: [String: Int]
    /// Calls whose every request was answered 200, per second.
    var goodput: Double
    var callP50: Double, callP99: Double, callMax: Double
    var requestP50: Double, requestP99: Double
    var refusalP99: Double
    /// Refusals by how long they took: the upper bounds in ms and the count within each (the last is beyond).
    var refusalLatencies: [Int]
    /// The fair gate's refusals by reason, from the service's metrics.
    var gateRefusals: [String: Double]?
    var toolCPUPerRequest: Double
    var toolLagP99: Double
    var serverCPUPerRequest: Double?
    var keyCacheHits: Double?
    var keyCacheMisses: Double?
    var stages: [WorkloadMetrics.Stage]
    var firstFailures: [String]

    init(label: String, results: [WorkloadResult], callsSent: Int, seconds: Double, toolCPU: Double, toolLag: Double, serverCPU: Double?,
         stages: [WorkloadMetrics.Stage], keyCache: (hits: Double, misses: Double)?, gateRefusals: [String: Double]? = nil) {
        self.label = label
        calls = callsSent
        self.seconds = seconds
        requests = results.count
        answered = results.filter { $0.status == 200 }.count
        let refused = results.filter { $0.status == 503 || $0.status == 429 }
        refusedWithRetryAfter = refused.filter(\.retryAfter).count
        refusedWithoutRetryAfter = refused.count - refusedWithRetryAfter
        transportErrors = results.filter { $0.status == 0 }.count
        otherErrors = results.count - answered - refused.count - transportErrors
        statuses = Dictionary(grouping: results, by: { String($0.status) }).mapValues(\.count)
        var byCall: [Int: [WorkloadResult]] = [:]
        for r in results { byCall[r.call, default: []].append(r) }
        let good = byCall.values.filter { $0.allSatisfy { $0.status == 200 } }
        goodput = Double(good.count) / max(seconds, 1e-9)
        let callLatencies = good.map { $0.map(\.latency.seconds).max() ?? 0 }
        callP50 = BenchReport.percentile(callLatencies, 0.5)
        callP99 = BenchReport.percentile(callLatencies, 0.99)
        callMax = callLatencies.max() ?? .nan
        let answeredLatencies = results.filter { $0.status == 200 }.map(\.latency.seconds)
        requestP50 = BenchReport.percentile(answeredLatencies, 0.5)
        requestP99 = BenchReport.percentile(answeredLatencies, 0.99)
        refusalP99 = BenchReport.percentile(refused.map(\.latency.seconds), 0.99)
        var buckets = Array(repeating: 0, count: Self.refusalBounds.count + 1)
        for r in refused {
            let ms = r.latency.seconds * 1000
            buckets[Self.refusalBounds.firstIndex { ms <= Double($0) } ?? Self.refusalBounds.count] += 1
        }
        refusalLatencies = buckets
        self.gateRefusals = gateRefusals
        toolCPUPerRequest = toolCPU / Double(max(results.count, 1))
        toolLagP99 = toolLag
        serverCPUPerRequest = serverCPU.map { $0 / Double(max(results.count, 1)) }
        keyCacheHits = keyCache?.hits
        keyCacheMisses = keyCache?.misses
        self.stages = stages
        firstFailures = Array(results.compactMap(\.failure).prefix(5))
    }

    /// The bounds of `refusalLatencies`, ms.
    static let refusalBounds = [10, 25, 50, 100, 250, 500, 1000]

    var markdown: String {
        func ms(_ v: Double) -> String { v.isNaN ? "–" : String(format: "%.1f", v * 1000) }
        var lines = [
            "| run | calls | s | requests | 200 | 503/429 with Retry-After | without | other | transport | goodput calls/s | call p50 ms | call p99 ms | call max ms | refusal p99 ms | server CPU ms/request | tool CPU ms/request | tool lag p99 ms |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            "| \(label) | \(calls) | \(String(format: "%.1f", seconds)) | \(requests) | \(answered) | \(refusedWithRetryAfter) | \(refusedWithoutRetryAfter) | "
                + "\(otherErrors) | \(transportErrors) | \(String(format: "%.2f", goodput)) | \(ms(callP50)) | \(ms(callP99)) | \(ms(callMax)) | "
                + "\(ms(refusalP99)) | \(serverCPUPerRequest.map { ms($0) } ?? "–") | \(ms(toolCPUPerRequest)) | \(ms(toolLagP99)) |",
        ]
        if let hits = keyCacheHits, let misses = keyCacheMisses, hits + misses > 0 {
            lines.append("")
            lines.append(String(format: "key cache: %.0f hits, %.0f misses (%.1f%% hits)", hits, misses, 100 * hits / (hits + misses)))
        }
        if refusedWithRetryAfter + refusedWithoutRetryAfter > 0 {
            let buckets = Self.refusalBounds.enumerated().map { "≤ \($0.element) ms: \(refusalLatencies[$0.offset])" }
                + ["> \(Self.refusalBounds.last!) ms: \(refusalLatencies.last!)"]
            lines += ["", "refusals by latency: " + buckets.joined(separator: ", ")]
        }
        if let gateRefusals, !gateRefusals.isEmpty {
            lines.append("gate refusals by reason: " + gateRefusals.sorted { $0.key < $1.key }.map { "\($0.key) \(Int($0.value))" }.joined(separator: ", "))
        }
        if !stages.isEmpty {
            lines += ["", "| stage | count | mean ms | p99 ≤ ms |", "|---|---:|---:|---:|"]
            for s in stages { lines.append("| \(s.stage) | \(Int(s.count)) | \(ms(s.mean)) | \(s.p99.isInfinite ? "∞" : ms(s.p99)) |") }
        }
        if !firstFailures.isEmpty { lines += ["", "first failures: " + firstFailures.joined(separator: "; ")] }
        return lines.joined(separator: "\n")
    }
}
