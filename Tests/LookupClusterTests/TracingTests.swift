import Foundation
import LoadGeneration
import LookupCoordinator
import LookupDeployment
import LookupEngine
import LookupService
import LookupWorker
import ServiceCore
import ServiceTestSupport
import Testing

/// A lookup's trace: with tracing on, one `/queries` request exports a server span whose children are its stages,
/// and the worker's spans (queue wait, compute) join the same trace under the coordinator's hop, through the
/// cluster wire's trace context. The exporter is swift-otel's OTLP/HTTP one, the collector a real HTTP endpoint.
@Suite("Tracing")
struct TracingTests {
    @Test("A lookup through the cluster path is one trace: request, stages, the hop, and the worker's stages under it")
    func lookupTrace() async throws {
        let traced = try await TracedCollector.start()
        let collector = traced.collector, tracing = traced.tracing
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 60)
        let cluster = try EmbeddedCluster(tracer: tracing.tracer)
        let config = try writeServiceConfig(in: directory, usecases: data.useCases)
        let server = try await TestServer.start(configPath: config, makeExecutor: cluster.makeExecutor(logger: TestServer.logger),
                                                metrics: cluster.metrics)
        let workers = try await cluster.startWorkers(count: 1, dataDirectory: "\(directory)/embedded", threads: 1, server: server.server,
                                                     logger: TestServer.logger)
        let record = data.records[0]
        let identifier = UUID().uuidString
        #expect(try await server.device(userIdentifier: identifier).lookup(Array(record.number.utf8), in: DemoDataset.block)
                == record.blockValue)

        // The batch processor exports every 100 ms: wait until the query's trace has its worker spans.
        var trace: [OTLPCollector.Span] = []
        _ = try await eventually(seconds: 10) {
            let spans = collector.spans
            guard let query = spans.last(where: { $0.name == "POST /queries" }) else { return false }
            trace = spans.filter { $0.traceID == query.traceID }
            return trace.contains { $0.name == "compute" }
        }
        print(OTLPCollector.render(trace).joined(separator: "\n"))
        func one(_ name: String) throws -> OTLPCollector.Span { try #require(trace.first { $0.name == name }, "no \(name) span") }
        let request = try one("POST /queries"), hop = try one("cluster_round_trip"), worker = try one("worker_query")
        #expect(request.parentSpanID.isEmpty)
        for stage in ["token_check", "routing", "execution"] { #expect(try one(stage).parentSpanID == request.spanID) }
        #expect(hop.parentSpanID == request.spanID)
        #expect(worker.parentSpanID == hop.spanID)
        #expect(try one("queue_wait").parentSpanID == worker.spanID)
        #expect(try one("compute").parentSpanID == worker.spanID)
        #expect(request.attributes["http.response.status_code"] == "200")
        #expect(worker.start >= hop.start && worker.end <= hop.end)
        // Nothing identifying the phone: no attribute carries its identifier, number or key.
        #expect(!trace.contains { $0.attributes.values.contains { $0.contains(identifier) } })

        for worker in workers { worker.stop() }
        await server.stop()
        (server.server.executor as? ClusterCoordinator)?.shutdown()
        await traced.stop()
    }

    static let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test("A worker takes only W3C Trace Context's two fields from a query, printable and bounded; anything else loses the trace, not the query",
          arguments: [
              (["traceparent": parent], true),
              (["traceparent": parent, "tracestate": "vendor=x"], true),
              ([:], true),
              (["traceparent": parent, "user": "someone"], false),
              (["tracestate": String(repeating: "a", count: ClusterLimits.maxTraceFieldBytes + 1)], false),
              (["traceparent": "00-\u{7}"], false),
          ] as [([String: String], Bool)])
    func traceCarrierBounds(fields: [String: String], accepted: Bool) {
        #expect((ClusterLimits.traceCarrier(fields) != nil) == accepted)
    }
}
