import Logging
import ServiceCore
import ServiceLifecycle
import UnixSignals

/// The tracing backend the environment asks for (`OTEL_TRACES_EXPORTER=otlp`), logged when on; nil by default.
func tracingFromEnvironment(serviceName: String, logger: Logger) throws -> TracingBackend? {
    let tracing = try TracingBackend.fromEnvironment(serviceName: serviceName, logger: logger)
    if tracing != nil { logger.info("tracing on (OTLP over HTTP)", metadata: ["service": .string(serviceName)]) }
    return tracing
}

/// Runs `service` until SIGTERM or SIGINT, with the tracing exporter beside it when on; the exporter stops after the
/// service has drained, so the spans of its last requests are sent.
func runUntilSignalled(_ service: some Service, tracing: TracingBackend?, logger: Logger) async throws {
    var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
    if let tracing { services.append(.init(service: tracing.service)) }
    services.append(.init(service: service))
    try await ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint],
                                                logger: logger)).run()
}
