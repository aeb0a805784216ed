import Foundation
import Logging
import LookupEngine
import ServiceCore
import Synchronization
import Testing

/// Metrics and logs by the conventions operators' tools expect: every family documented, labels from bounded
/// sets, log lines a shipper can parse.
@Suite("Observability conventions")
struct ObservabilityTests {
    /// Every metric name written in the sources, as a string literal.
    static func namesInSources() throws -> Set<String> {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../Sources").standardized
        let pattern = try NSRegularExpression(pattern: "\"((?:callveil|process)_[a-z0-9_]+)\"")
        var names = Set<String>()
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                names.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        return names
    }

    @Test("every metric name in the sources has help text in MetricCatalog, and the catalog names no metric nobody records")
    func catalogMatchesSources() throws {
        let used = try Self.namesInSources()
        let documented = Set(MetricCatalog.help.keys)
        #expect(used.count > 40)
        #expect(used.subtracting(documented).isEmpty, "names without help: \(used.subtracting(documented).sorted())")
        #expect(documented.subtracting(used).isEmpty, "help for names nothing records: \(documented.subtracting(used).sorted())")
        for (name, help) in MetricCatalog.help {
            #expect(!help.isEmpty && help.hasSuffix("."), "\(name): help is a sentence")
            #expect(name.range(of: "^[a-z][a-z0-9_]*$", options: .regularExpression) != nil, "\(name) is snake case")
        }
    }

    @Test("the exposition has HELP and TYPE for every family, counters end in _total, and the process metrics are there")
    func expositionConventions() throws {
        let metrics = ServiceMetrics()
        metrics.setBuildInfo(version: "9.9.9")
        metrics.recordRequest(route: "/queries", status: 200, duration: .milliseconds(12))
        metrics.recordRequest(route: "/queries", status: 503, duration: .milliseconds(1))
        metrics.recordRejection(reason: "unauthorized")
        metrics.recordCompute(useCase: "block", duration: .milliseconds(3))
        metrics.increment("callveil_cluster_queries_shed_total")
        metrics.set("callveil_worker_shards", 3)
        let lines = String(decoding: metrics.exposition(), as: UTF8.self).split(separator: "\n").map(String.init)
        let typed = Dictionary(uniqueKeysWithValues: lines.filter { $0.hasPrefix("# TYPE ") }.map {
            let parts = $0.split(separator: " ")
            return (String(parts[2]), String(parts[3]))
        })
        let helped = Set(lines.filter { $0.hasPrefix("# HELP ") }.map { String($0.split(separator: " ")[2]) })
        #expect(Set(typed.keys) == helped, "families without HELP: \(Set(typed.keys).subtracting(helped).sorted())")
        for (name, type) in typed where type == "counter" { #expect(name.hasSuffix("_total"), "\(name) is a counter") }
        for name in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"] {
            #expect(typed[name] != nil, "\(name) exported")
        }
        #expect(lines.contains("callveil_build_info{version=\"9.9.9\"} 1.0"))
        #expect(lines.contains("callveil_http_requests_total{route=\"/queries\",result=\"overloaded\"} 1"))
        #expect(!lines.contains { $0.contains("status=") }, "no status codes as labels")
    }

    @Test("label values come from bounded sets: a result class per status, a reason name per refusal, never a number")
    func boundedLabels() {
        let results = Set((100...599).map(ServiceMetrics.result(ofStatus:)))
        #expect(results == ["ok", "client_error", "overloaded", "server_error", "cancelled"])
        let reasons = Set((400...499).map(RequestObserverMiddleware.rejectionReason(ofStatus:)))
        #expect(reasons.count <= 12)
        #expect(reasons.allSatisfy { $0.range(of: "^[a-z_]+$", options: .regularExpression) != nil }, "\(reasons.sorted())")
        #expect(RequestObserverMiddleware.rejectionReason(ofStatus: 401) == "unauthorized")
    }

    /// Log lines written by a handler in `format`.
    static func lines(_ format: StructuredLogHandler.Format, _ log: (Logger) -> Void) -> [String] {
        let written = Mutex<[String]>([])
        var logger = Logger(label: "callveil-test") { label in
            StructuredLogHandler(label: label, level: .info, format: format) { line in written.withLock { $0.append(line) } }
        }
        logger[metadataKey: "component"] = "test"
        log(logger)
        return written.withLock { $0 }
    }

    @Test("logfmt quotes values with spaces, quotes, = or newlines; JSON lines parse, with metadata as fields")
    func logFormats() throws {
        let event: (Logger) -> Void = { logger in
            logger.info("use case loaded", metadata: ["usecase": "block", "path": "/data/a b.json", "error": "said \"no\"\nthen=stop"])
            logger.debug("not written at info")
        }
        let logfmt = Self.lines(.logfmt, event)
        #expect(logfmt.count == 1)
        let line = try #require(logfmt.first)
        #expect(line.hasSuffix("\n") && line.dropLast().contains("\n") == false, "one line per event")
        #expect(line.contains(" level=info logger=callveil-test msg=\"use case loaded\" "))
        #expect(line.contains(" component=test "))
        #expect(line.contains(" path=\"/data/a b.json\""))
        #expect(line.contains(" error=\"said \\\"no\\\"\\nthen=stop\""))
        #expect(line.contains(" usecase=block"))
        #expect(line.hasPrefix("ts=20"))

        let json = Self.lines(.json, event)
        #expect(json.count == 1)
        let first = try #require(json.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: String])
        #expect(object["msg"] == "use case loaded")
        #expect(object["level"] == "info")
        #expect(object["error"] == "said \"no\"\nthen=stop")
        #expect(object["path"] == "/data/a b.json")
        #expect(object["component"] == "test")
        #expect(object["ts"].map { $0.hasSuffix("Z") } == true)
    }
}
