import Foundation
import LookupClient

/// The service's Prometheus metrics around a replay: the stage histograms (`callveil_lookup_stage_seconds`) and
/// the parsed-key cache's hits and misses, as differences between a scrape before and one after.
struct WorkloadMetrics: Sendable {
    /// One stage's lookups in the run: how many, their mean and the p99 bucket's upper bound (seconds).
    struct Stage: Codable {
        var stage: String
        var count: Double
        var mean: Double
        var p99: Double
    }

    let url: String

    init(_ url: String) { self.url = url }

    /// Every sample of the exposition, by series (`name{labels}`).
    func scrape() async throws -> [String: Double] {
        let http = LookupHTTPClient(baseURL: url)
        let (status, body) = try await http.send(method: .GET, path: "", headers: [], body: nil)
        guard status == 200 else { throw WorkloadError("\(url) answered \(status)") }
        var samples: [String: Double] = [:]
        for line in String(decoding: body, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    /// A label's value in a series text.
    static func label(_ name: String, in series: String) -> String? {
        guard let range = series.range(of: "\(name)=\"") else { return nil }
        let rest = series[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    /// The lookup stages in the run, and the compute jobs' CPU time by lane (`cpu_query_job`, `cpu_key_job`: what the
    /// `compute` stage's wall time took of the core).
    static func stages(before: [String: Double], after: [String: Double]) -> [Stage] {
        histograms("callveil_lookup_stage_seconds", by: "stage", before: before, after: after)
            + histograms("callveil_compute_job_cpu_seconds", by: "lane", before: before, after: after).map {
                Stage(stage: "cpu_\($0.stage)_job", count: $0.count, mean: $0.mean, p99: $0.p99)
            }
    }

    /// The histogram family `prefix`'s series in the run, one per value of the label `name`.
    static func histograms(_ prefix: String, by name: String, before: [String: Double], after: [String: Double]) -> [Stage] {
        var stages: [Stage] = []
        for (series, count) in after where series.hasPrefix(prefix + "_count") {
            guard let stage = label(name, in: series) else { continue }
            let n = count - (before[series] ?? 0)
            guard n > 0 else { continue }
            let sumSeries = series.replacingOccurrences(of: "_count", with: "_sum")
            let sum = (after[sumSeries] ?? 0) - (before[sumSeries] ?? 0)
            let buckets = after.compactMap { key, value -> (Double, Double)? in
                guard key.hasPrefix(prefix + "_bucket"), label(name, in: key) == stage,
                      let le = label("le", in: key).flatMap({ $0 == "+Inf" ? Double.infinity : Double($0) }) else { return nil }
                return (le, value - (before[key] ?? 0))
            }.sorted { $0.0 < $1.0 }
            let p99 = buckets.first { $0.1 >= 0.99 * n }?.0 ?? .infinity
            stages.append(Stage(stage: stage, count: n, mean: sum / n, p99: p99))
        }
        return stages.sorted { $0.stage < $1.stage }
    }

    /// The fair gate's refusals in the run, by reason (`callveil_admission_refusals_total`).
    static func gateRefusals(before: [String: Double], after: [String: Double]) -> [String: Double] {
        let prefix = "callveil_admission_refusals_total{"
        var refusals: [String: Double] = [:]
        for (series, value) in after where series.hasPrefix(prefix) {
            guard let reason = label("reason", in: series) else { continue }
            let n = value - (before[series] ?? 0)
            if n > 0 { refusals[reason] = n }
        }
        return refusals
    }

    static func keyCache(before: [String: Double], after: [String: Double]) -> (hits: Double, misses: Double) {
        func delta(_ result: String) -> Double {
            let series = "callveil_key_cache_lookups_total{result=\"\(result)\"}"
            return (after[series] ?? 0) - (before[series] ?? 0)
        }
        return (delta("hit"), delta("miss"))
    }
}
