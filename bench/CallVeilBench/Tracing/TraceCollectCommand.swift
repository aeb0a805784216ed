import ArgumentParser
import Foundation
import LoadGeneration
import Logging
import ServiceLifecycle

/// `callveil-bench trace-collect`: an OTLP/HTTP (JSON) collector for a traced run. It keeps every span until SIGTERM
/// or SIGINT, then prints the slowest `/queries` traces as trees and the mean of each stage over all of them, so the
/// cause of a slow lookup is read from its trace. Point a server at it with `OTEL_TRACES_EXPORTER=otlp`,
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:PORT/v1/traces`, `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json`.
struct TraceCollectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace-collect",
        abstract: "Collect a traced run's spans (OTLP/HTTP JSON) and print its slowest lookups' traces.")

    @Option(help: "Loopback port to listen on.") var port = 4318
    @Option(help: "Slowest traces to print.") var top = 1
    @Option(help: "Only requests that ended within this many seconds before the stop (0: all).") var window = 0.0

    func run() async throws {
        let collector = OTLPCollector()
        let port = self.port
        let app = collector.makeApplication(port: port) { bound in writeStderr("trace-collect: listening on \(bound)\n") }
        try await ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint],
                                                    logger: Logger(label: "trace-collect"))).run()
        let spans = collector.spans
        let byTrace = Dictionary(grouping: spans, by: \.traceID)
        let cutoff = (spans.map(\.end).max() ?? 0) &- UInt64(window * 1e9)
        let all = spans.filter { $0.name == "POST /queries" && (window == 0 || $0.end >= cutoff) }
        // Answered lookups only: refusals (429, 503) are quick by design and would hide the slow answers.
        let requests = all.filter { $0.attributes["http.response.status_code"] == "200" }.sorted { $0.duration > $1.duration }
        print("spans \(spans.count), traces \(byTrace.count), /queries requests \(all.count), answered 200: \(requests.count)")
        guard !requests.isEmpty else { return }
        let percentile = { (p: Double) -> Double in
            let sorted = requests.map { Double($0.end &- $0.start) / 1e6 }.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        print(String(format: "answered /queries spans: p50 %.1f ms, p99 %.1f ms, max %.1f ms", percentile(0.5), percentile(0.99), percentile(1)))
        // The mean time per stage over the answered requests' traces: where an average lookup's time goes.
        var totals: [String: (Double, Int)] = [:]
        for request in requests {
            for span in byTrace[request.traceID] ?? [] where span.spanID != request.spanID {
                let entry = totals[span.name] ?? (0, 0)
                totals[span.name] = (entry.0 + Double(span.end &- span.start) / 1e6, entry.1 + 1)
            }
        }
        print("stage                              spans   mean ms")
        for (name, (sum, count)) in totals.sorted(by: { $0.value.0 > $1.value.0 }) {
            print(name.padding(toLength: 32, withPad: " ", startingAt: 0) + String(format: "%8d %9.1f", count, sum / Double(count)))
        }
        for request in requests.prefix(top) {
            print("\nslow lookup: trace \(request.traceID)")
            print("span                                  start      length  service")
            print(OTLPCollector.render(byTrace[request.traceID] ?? []).joined(separator: "\n"))
        }
    }
}
