import Tracing

/// Spans of a lookup's stages. A stage is timed once, on the monotonic clock, for both its histogram and its span,
/// so the trace and `callveil_lookup_stage_seconds` tell the same story. Nothing identifying a phone goes in a span:
/// names are stage and route names, attributes are use cases, shard indices and outcomes.
extension ServiceMetrics {
    /// A stage timed from its start whose span is open while it runs, so that work it causes in another process (a
    /// worker's query) is traced as its child: `traceCarrier` goes on the wire.
    public struct OpenStage: Sendable {
        let metrics: ServiceMetrics
        let stage: LookupStage
        let start: ContinuousClock.Instant
        let span: (any Span)?

        /// The span's context in W3C Trace Context fields (`traceparent`, `tracestate`); empty when tracing is off
        /// or the request is not sampled.
        public var traceCarrier: [String: String] {
            guard let tracer = metrics.tracer, let span else { return [:] }
            var carrier: [String: String] = [:]
            tracer.inject(span.context, into: &carrier, using: DictionaryInjector())
            return carrier
        }

        /// Ends the stage and closes its span. A stage that completed records its histogram sample; a failed one
        /// (retried elsewhere, or an error) is marked so in its span only.
        public func end(failed: Bool = false) {
            if failed {
                span?.setStatus(SpanStatus(code: .error))
            } else {
                metrics.recordStage(stage, .now - start, context: nil)
            }
            span?.end()
        }
    }

    /// Starts timing `stage` under the task's context (a span only when tracing is on and a request span is current).
    public func beginStage(_ stage: LookupStage) -> OpenStage {
        let span = tracer.flatMap { tracer in
            ServiceContext.current.map { tracer.startSpan(stage.rawValue, context: $0, ofKind: .client) as any Span }
        }
        return OpenStage(metrics: self, stage: stage, start: .now, span: span)
    }

    /// The context a peer sent in W3C Trace Context fields, to parent this process's spans of the same request.
    public func traceContext(from carrier: [String: String]) -> ServiceContext? {
        guard let tracer, !carrier.isEmpty else { return nil }
        var context = ServiceContext.topLevel
        tracer.extract(carrier, into: &context, using: DictionaryExtractor())
        return context
    }

    /// A span of an interval already measured on the monotonic clock, placed on the wall clock relative to now.
    func recordSpan(_ name: String, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant,
                    context: ServiceContext) {
        guard let tracer else { return }
        let now = ContinuousClock.now
        let wallNow = DefaultTracerClock.now.nanosecondsSinceEpoch
        func wall(_ instant: ContinuousClock.Instant) -> WallInstant {
            let (seconds, attoseconds) = (now - instant).components
            let ago = max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
            return WallInstant(nanosecondsSinceEpoch: wallNow &- min(UInt64(ago), wallNow))
        }
        let span = tracer.startSpan(name, context: context, ofKind: .internal, at: wall(start))
        span.end(at: wall(end))
    }
}

/// A wall-clock instant for a span's start or end.
private struct WallInstant: TracerInstant {
    let nanosecondsSinceEpoch: UInt64

    static func < (a: WallInstant, b: WallInstant) -> Bool { a.nanosecondsSinceEpoch < b.nanosecondsSinceEpoch }
}
