import CoreMetrics
import Prometheus
import Tracing

/// The service's metrics (swift-metrics API, exported in Prometheus text format at `GET /metrics`): HTTP
/// requests and latencies per route and status, PIR compute time per use case, keys stored.
public final class ServiceMetrics: Sendable {
    /// The registry `/metrics` renders.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let keysStored: CoreMetrics.Gauge
    private let keyBytesStored: CoreMetrics.Gauge
    private let keysEvicted: CoreMetrics.Counter
    /// Where request and stage spans go when tracing is on (OpenTelemetry, `ServiceMetrics+Tracing.swift`); nil: off.
    public let tracer: (any Tracer)?

    /// Metrics in a registry of their own (several services in one process do not mix), and spans into `tracer`.
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), tracer: (any Tracer)? = nil) {
        self.registry = registry
        self.tracer = tracer
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(10),
        ]
        self.factory = factory
        keysStored = CoreMetrics.Gauge(label: "callveil_evaluation_keys_stored", factory: factory)
        keyBytesStored = CoreMetrics.Gauge(label: "callveil_evaluation_key_bytes_stored", factory: factory)
        keysEvicted = CoreMetrics.Counter(label: "callveil_evaluation_keys_evicted_total", factory: factory)
    }

    /// Records one HTTP request.
    public func recordRequest(route: String, status: Int, duration: Duration) {
        CoreMetrics.Counter(label: "callveil_http_requests_total", dimensions: [("route", route), ("status", String(status))],
                factory: factory).increment()
        CoreMetrics.Timer(label: "callveil_http_request_duration_seconds", dimensions: [("route", route)], factory: factory)
            .recordNanoseconds(Self.nanoseconds(duration))
    }

    /// Records the PIR computation of one shard query.
    public func recordCompute(useCase: String, duration: Duration) {
        CoreMetrics.Timer(label: "callveil_pir_compute_seconds", dimensions: [("usecase", useCase)], factory: factory)
            .recordNanoseconds(Self.nanoseconds(duration))
    }

    /// Records the time one lookup spent in `stage` (`callveil_lookup_stage_seconds`), the `duration` up to `end`;
    /// when tracing is on, also a span of that interval under `context` (the request's, by default the task's).
    public func recordStage(_ stage: LookupStage, _ duration: Duration, endingAt end: ContinuousClock.Instant = .now,
                            context: ServiceContext? = ServiceContext.current) {
        CoreMetrics.Timer(label: "callveil_lookup_stage_seconds", dimensions: [("stage", stage.rawValue)], factory: factory)
            .recordNanoseconds(Self.nanoseconds(duration))
        if tracer != nil, let context { recordSpan(stage.rawValue, from: end - duration, to: end, context: context) }
    }

    /// Records a refused request by reason class (for alerting on bad clients).
    public func recordRejection(reason: String) {
        CoreMetrics.Counter(label: "callveil_rejected_requests_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    /// Adds one to a counter of another component of this process (the cluster's messages, transfers).
    public func increment(_ label: String, dimensions: [(String, String)] = [], by amount: Int = 1) {
        CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory).increment(by: amount)
    }

    /// Records a duration of another component of this process.
    public func recordDuration(_ label: String, _ duration: Duration, dimensions: [(String, String)] = []) {
        CoreMetrics.Timer(label: label, dimensions: dimensions, factory: factory).recordNanoseconds(Self.nanoseconds(duration))
    }

    /// Sets a gauge of another component of this process.
    public func set(_ label: String, _ value: Int, dimensions: [(String, String)] = []) {
        CoreMetrics.Gauge(label: label, dimensions: dimensions, factory: factory).record(value)
    }

    /// Records what the evaluation-key store holds (keys and bytes, expired ones until purged) and the keys a
    /// write evicted to stay within the store's size limit.
    public func recordKeyStore(_ usage: KeyStoreUsage) {
        keysStored.record(usage.keys)
        keyBytesStored.record(usage.bytes)
        if usage.evicted > 0 { keysEvicted.increment(by: usage.evicted) }
    }

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }

    private static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
