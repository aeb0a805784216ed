import Foundation
import LoadGeneration
import LookupClient
import PIR

/// One measured run.
struct BenchRun: Codable {
    let label: String
    let workers: Int?
    let phones: Int
    let mode: LoadGenerator.Mode
    let result: LoadGenerator.Result
    /// Process CPU during the run (server and phones share the process when embedded).
    let cpuSeconds: Double?
    /// Server PIR compute time during the run (sum over requests).
    let pirComputeSeconds: Double?

    var lookupsPerSecond: Double { Double(result.lookups) / max(result.seconds, 1e-9) }
    var requests: Int { result.lookups * 2 }
}

/// Results of a bench invocation: JSON, markdown and plots.
struct BenchReport: Codable {
    let rows: Int
    let identitySize: Int
    let blockShards: Int
    let identityShards: Int
    let preset: String
    let target: String
    let cores: Int
    let runs: [BenchRun]

    func write(to directory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: "\(directory)/results.json"))
        try markdown().write(toFile: "\(directory)/table.md", atomically: true, encoding: .utf8)
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    func markdown() -> String {
        func ms(_ v: Double) -> String { v.isNaN ? "–" : String(format: "%.1f", v * 1000) }
        var lines = [
            "\(rows) numbers (block shards \(blockShards), identity shards \(identityShards), identity values \(identitySize) B, \(preset)), target \(target), \(cores) cores",
            "",
            "| run | workers | phones | lookups | lookups/s | block p50/p90/p99 ms | identity p50/p90/p99 ms | lookup p50/p99 ms | CPU ms/request | PIR ms/request | up/down KB per request | key upload KB | wrong | errors | 503/429 (retried ok) | 410 resyncs |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for run in runs {
            let r = run.result
            let requests = max(run.requests, 1)
            lines.append("| \(run.label) | \(run.workers.map(String.init) ?? "–") | \(run.phones) | \(r.lookups) | \(String(format: "%.2f", run.lookupsPerSecond)) | "
                + "\(ms(Self.percentile(r.blockLatencies, 0.5)))/\(ms(Self.percentile(r.blockLatencies, 0.9)))/\(ms(Self.percentile(r.blockLatencies, 0.99))) | "
                + "\(ms(Self.percentile(r.identityLatencies, 0.5)))/\(ms(Self.percentile(r.identityLatencies, 0.9)))/\(ms(Self.percentile(r.identityLatencies, 0.99))) | "
                + "\(ms(Self.percentile(r.lookupLatencies, 0.5)))/\(ms(Self.percentile(r.lookupLatencies, 0.99))) | "
                + "\(run.cpuSeconds.map { String(format: "%.1f", $0 * 1000 / Double(requests)) } ?? "–") | "
                + "\(run.pirComputeSeconds.map { String(format: "%.1f", $0 * 1000 / Double(requests)) } ?? "–") | "
                + String(format: "%.1f / %.1f", Double(r.queryBytesUp) / 1024 / Double(requests), Double(r.queryBytesDown) / 1024 / Double(requests))
                + " | \(String(format: "%.0f", Double(r.keyUploadBytes) / 1024)) | \(r.mismatches) | \(r.errors) | \(r.unavailable) (\(r.retriedSucceeded)) | \(r.configRefreshes) |")
        }
        for run in runs where run.result.targets.count > 1 {
            lines.append("")
            lines.append("\(run.label), by front door:")
            lines.append("")
            lines.append("| front door | lookups | wrong | errors | of which no HTTP answer |")
            lines.append("|---|---|---|---|---|")
            for (target, t) in run.result.targets.sorted(by: { $0.key < $1.key }) {
                lines.append("| \(target) | \(t.lookups) | \(t.mismatches) | \(t.errors) | \(t.connectionErrors) |")
            }
        }
        lines.append("")
        lines.append("CPU ms/request is the whole process (server and simulated phones) when the server is embedded; PIR ms/request is the server's compute time.")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Renders the plots with bench/plot.py (installs matplotlib with pip when missing); a failure only warns.
    static func plot(output: String) {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("bench/plot.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "\(output)/results.json", output]
        do {
            try process.run()
            process.waitUntilExit()
            if process.terminationStatus != 0 { writeStderr("plots not rendered (bench/plot.py exited \(process.terminationStatus))\n") }
        } catch {
            writeStderr("plots not rendered: \(error)\n")
        }
    }
}
