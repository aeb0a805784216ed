import Foundation
import LoadGeneration
import LookupEngine
import ObliviousHTTP
import ServiceCore
import ServiceTestSupport
import Testing

extension ObliviousGatewayTests {
    @Test("Traced, a request through the gateway is one trace: the inner request's span is the gateway request's child, whatever trace context the phone put inside")
    func gatewayTrace() async throws {
        let traced = try await TracedCollector.start()
        let collector = traced.collector, tracing = traced.tracing
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 60)
        let config = try writeServiceConfig(in: directory, usecases: data.useCases, privacyPass: false) { $0.gateway = .init() }
        let server = try await TestServer.start(configPath: config, metrics: ServiceMetrics(tracer: tracing.tracer))
        // A phone's inner request carrying a trace context of its own: it must not choose the server's trace.
        let inner = try BinaryHTTPRequest(method: "POST", authority: "lookup.example", path: "/config", headers: [
            BinaryHTTPField("user-identifier", "gw-trace"), BinaryHTTPField("user-agent", "com.apple.ciphermld/1.0 iOS/18.2 test"),
            BinaryHTTPField("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        ], content: Self.configBody).encoded()
        let (status, _) = try await Self.post(server, try await Self.encapsulate(inner, server: server).encapsulated)
        #expect(status == 200)

        var spans: [OTLPCollector.Span] = []
        _ = try await eventually(seconds: 10) {
            spans = collector.spans
            return spans.contains { $0.name == "POST /config" } && spans.contains { $0.name == "POST /ohttp-gateway" }
        }
        print(OTLPCollector.render(spans).joined(separator: "\n"))
        let outer = try #require(spans.first { $0.name == "POST /ohttp-gateway" })
        let configSpan = try #require(spans.first { $0.name == "POST /config" })
        let decapsulation = try #require(spans.first { $0.name == "decapsulation" })
        #expect(outer.parentSpanID.isEmpty)
        #expect(configSpan.traceID == outer.traceID && configSpan.parentSpanID == outer.spanID)
        #expect(decapsulation.parentSpanID == outer.spanID)

        await server.stop()
        await traced.stop()
    }
}
