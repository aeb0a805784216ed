import Prometheus
import Synchronization
import Tracing

/// The service's metrics, exported in Prometheus text format at `GET /metrics`: each family with the help text of
/// `MetricCatalog`, labels from bounded sets, gauges that describe state read when scraped (`addCollector`), and the
/// process's own metrics (`process_*`).
public final class ServiceMetrics: Sendable {
    /// The registry `/metrics` renders.
    public let registry: PrometheusCollectorRegistry
    private let keysStored: Prometheus.Gauge
    private let keyBytesStored: Prometheus.Gauge
    private let keysEvicted: Prometheus.Counter
    private let collectors = Mutex<[@Sendable (ServiceMetrics) -> Void]>([])
    /// The counters and histograms already made, by name and labels: the registry validates the name, the labels and
    /// the help text on every `make…` call, several times for every request, refused ones too.
    private let counters = Mutex<[SeriesKey: Prometheus.Counter]>([:])
    private let histograms = Mutex<[SeriesKey: DurationHistogram]>([:])
    /// Where request and stage spans go when tracing is on (OpenTelemetry, `ServiceMetrics+Tracing.swift`); nil: off.
    public let tracer: (any Tracer)?

    /// Buckets of every duration histogram: 100 µs to 10 s.
    static let durationBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(10),
    ]

    /// Metrics in a registry of their own (several services in one process do not mix), and spans into `tracer`.
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), tracer: (any Tracer)? = nil) {
        self.registry = registry
        self.tracer = tracer
        keysStored = registry.makeGauge(descriptor: Self.descriptor("callveil_evaluation_keys_stored"))
        keyBytesStored = registry.makeGauge(descriptor: Self.descriptor("callveil_evaluation_keys_stored_bytes"))
        keysEvicted = registry.makeCounter(descriptor: Self.descriptor("callveil_evaluation_keys_evicted_total"))
        let process = ProcessMetrics()
        addCollector { process.record(into: $0) }
    }

    /// Adds a collector run before every exposition: it sets the gauges of state that is cheap to read (connected
    /// workers, cache sizes), so a scrape never sees a value older than the scrape.
    public func addCollector(_ collect: @escaping @Sendable (ServiceMetrics) -> Void) {
        collectors.withLock { $0.append(collect) }
    }

    /// Sets `callveil_build_info{version}` to 1.
    public func setBuildInfo(version: String) {
        set("callveil_build_info", 1, dimensions: [("version", version)])
    }

    /// Records one HTTP request.
    public func recordRequest(route: String, status: Int, duration: Duration) {
        increment("callveil_http_requests_total", dimensions: [("route", route), ("result", Self.result(ofStatus: status))])
        recordDuration("callveil_http_request_duration_seconds", duration, dimensions: [("route", route)])
    }

    /// Records the PIR computation of one shard query.
    public func recordCompute(useCase: String, duration: Duration) {
        recordDuration("callveil_pir_compute_seconds", duration, dimensions: [("usecase", useCase)])
    }

    /// Records the CPU time a compute job of `lane` used on its thread (`callveil_compute_job_cpu_seconds`).
    public func recordJobCPU(lane: String, _ duration: Duration) {
        recordDuration("callveil_compute_job_cpu_seconds", duration, dimensions: [("lane", lane)])
    }

    /// Records the time one lookup spent in `stage` (`callveil_lookup_stage_seconds`), the `duration` up to `end`;
    /// when tracing is on, also a span of that interval under `context` (the request's, by default the task's).
    public func recordStage(_ stage: LookupStage, _ duration: Duration, endingAt end: ContinuousClock.Instant = .now,
                            context: ServiceContext? = ServiceContext.current) {
        recordDuration("callveil_lookup_stage_seconds", duration, dimensions: [("stage", stage.rawValue)])
        if tracer != nil, let context { recordSpan(stage.rawValue, from: end - duration, to: end, context: context) }
    }

    /// Records a refused request by reason (an error code or `RejectionReason`'s class of its status), for
    /// alerting on bad clients.
    public func recordRejection(reason: String) {
        increment("callveil_rejected_requests_total", dimensions: [("reason", reason)])
    }

    /// Adds one to a counter of another component of this process (the cluster's messages, transfers).
    public func increment(_ label: String, dimensions: [(String, String)] = [], by amount: Int = 1) {
        Self.series(counters, SeriesKey(label, dimensions)) {
            registry.makeCounter(descriptor: Self.descriptor(label), labels: dimensions)
        }.increment(by: Int64(amount))
    }

    /// Records a duration of another component of this process.
    public func recordDuration(_ label: String, _ duration: Duration, dimensions: [(String, String)] = []) {
        Self.series(histograms, SeriesKey(label, dimensions)) {
            registry.makeDurationHistogram(descriptor: Self.descriptor(label), labels: dimensions, buckets: Self.durationBuckets)
        }.recordNanoseconds(Self.nanoseconds(duration))
    }

    /// The series kept in `cache` under `key`, made (outside the lock) and kept the first time.
    private static func series<Series: Sendable>(_ cache: borrowing Mutex<[SeriesKey: Series]>, _ key: SeriesKey,
                                                 make: () -> Series) -> Series {
        if let kept = cache.withLock({ $0[key] }) { return kept }
        let made = make()
        cache.withLock { $0[key] = made }
        return made
    }

    /// A series: a family's name and its label pairs in order.
    private struct SeriesKey: Hashable {
        let name: String
        let labels: [String]

        init(_ name: String, _ dimensions: [(String, String)]) {
            self.name = name
            labels = dimensions.flatMap { [$0.0, $0.1] }
        }
    }

    /// Sets a gauge of another component of this process.
    public func set(_ label: String, _ value: Int, dimensions: [(String, String)] = []) {
        registry.makeGauge(descriptor: Self.descriptor(label), labels: dimensions).set(Int64(value))
    }

    /// Sets a gauge to a fractional value (seconds, timestamps).
    public func set(_ label: String, _ value: Double, dimensions: [(String, String)] = []) {
        registry.makeGauge(descriptor: Self.descriptor(label), labels: dimensions).set(value)
    }

    /// Records what the evaluation-key store holds (keys and bytes, expired ones until purged) and the keys a
    /// write evicted to stay within the store's size limit.
    public func recordKeyStore(_ usage: KeyStoreUsage) {
        keysStored.set(Int64(usage.keys))
        keyBytesStored.set(Int64(usage.bytes))
        if usage.evicted > 0 { keysEvicted.increment(by: Int64(usage.evicted)) }
    }

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] {
        for collect in collectors.withLock({ $0 }) { collect(self) }
        return registry.emitToBuffer()
    }

    /// The bounded result class of an HTTP status, the `result` label of `callveil_http_requests_total`.
    public static func result(ofStatus status: Int) -> String {
        switch status {
        case 429, 503: "overloaded"
        case 499: "cancelled"
        case 500...: "server_error"
        case 400...: "client_error"
        default: "ok"
        }
    }

    /// The name and catalog help of a family (no help for a name the catalog lacks; a test keeps the catalog whole).
    static func descriptor(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: MetricCatalog.help[name] ?? "")
    }

    private static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
