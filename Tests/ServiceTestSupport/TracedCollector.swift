import LoadGeneration
import ServiceCore

/// What a traced test needs: an OTLP collector on a free loopback port, and a tracing backend exporting to it (JSON,
/// every 100 ms) with its exporter running.
public struct TracedCollector: Sendable {
    /// The spans received.
    public let collector: OTLPCollector
    /// The tracer to give `ServiceMetrics(tracer:)`.
    public let tracing: TracingBackend
    private let exporter: Task<Void, any Error>
    private let stopCollector: @Sendable () async -> Void

    /// Starts the collector and the exporter.
    public static func start() async throws -> TracedCollector {
        let collector = OTLPCollector()
        let (url, stopCollector) = try await collector.start()
        let tracing = try TracingBackend.otlp(endpoint: url, json: true, delay: .milliseconds(100), serviceName: "callveil-test",
                                              logger: TestServer.logger)
        let exporter = Task { try await tracing.service.run() }
        return TracedCollector(collector: collector, tracing: tracing, exporter: exporter, stopCollector: stopCollector)
    }

    /// Stops the exporter and the collector.
    public func stop() async {
        exporter.cancel()
        await stopCollector()
    }
}
