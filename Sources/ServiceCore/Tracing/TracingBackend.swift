import Foundation
import Logging
import LookupEngine
import OTel
import ServiceLifecycle
import Tracing

/// OpenTelemetry tracing of lookups (swift-otel, OTLP over HTTP), off unless asked for: the standard
/// `OTEL_TRACES_EXPORTER=otlp` turns it on, and the other standard `OTEL_*` variables (endpoint, protocol, sampler,
/// service name, batch sizes) configure it. A provider's collector gets each request's span and its stages.
public struct TracingBackend: Sendable {
    /// The tracer to give `ServiceMetrics(tracer:)`.
    public let tracer: any Tracer
    /// The exporter's service: run it beside the server, and stop it after, so the last spans are flushed.
    public let service: any Service

    /// The backend the environment asks for, or nil when tracing is off (the default). `OTEL_TRACES_EXPORTER` other
    /// than `otlp` or `none` is an error: spans can only be sent over OTLP.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment,
                                       serviceName: String, logger: Logger) throws -> TracingBackend? {
        guard let exporter = environment["OTEL_TRACES_EXPORTER"], exporter != "none",
              environment["OTEL_SDK_DISABLED"] != "true" else { return nil }
        guard exporter == "otlp" else {
            throw ConfigError("OTEL_TRACES_EXPORTER=\(exporter) is not supported: use otlp (or none)")
        }
        var configuration = base(serviceName: serviceName, logger: logger)
        configuration.traces.otlpExporter.protocol = .httpProtobuf  // OTLP's default; the gRPC exporter is not built
        return try make(configuration)
    }

    /// A backend sending spans to the OTLP/HTTP `endpoint` (its full traces URL) as JSON or protobuf, flushing every
    /// `delay`: for tools and tests that run their own collector.
    public static func otlp(endpoint: String, json: Bool = false, delay: Duration = .seconds(5), serviceName: String,
                            logger: Logger) throws -> TracingBackend {
        var configuration = base(serviceName: serviceName, logger: logger)
        configuration.traces.otlpExporter.endpoint = endpoint
        configuration.traces.otlpExporter.protocol = json ? .httpJSON : .httpProtobuf
        configuration.traces.batchSpanProcessor.scheduleDelay = delay
        return try make(configuration)
    }

    private static func base(serviceName: String, logger: Logger) -> OTel.Configuration {
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = switch logger.logLevel {  // the exporter's own logs at the process's level
        case .trace: .trace
        case .debug: .debug
        case .info, .notice: .info
        case .warning: .warning
        case .error, .critical: .error
        }
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.metrics.enabled = false  // Prometheus at /metrics is the metrics path
        configuration.logs.enabled = false
        return configuration
    }

    private static func make(_ configuration: OTel.Configuration) throws -> TracingBackend {
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        return TracingBackend(tracer: tracer, service: service)
    }
}
