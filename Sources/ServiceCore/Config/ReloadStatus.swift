import Foundation
import LookupEngine
import Synchronization

/// Whether the configuration last loaded in full: kept for `/readyz` and exported as
/// `callveil_config_reloads_total{result}`, `callveil_config_last_reload_successful` and
/// `callveil_config_last_reload_success_timestamp_seconds`, so a reload that kept the previous version of a use case
/// is seen, not only logged.
public final class ReloadStatus: Sendable {
    /// The outcome of the last load.
    public struct Outcome: Sendable, Equatable {
        /// Use cases that failed to load (they serve their previous version); empty on success.
        public var failedUseCases: [String]
        /// Why the whole reload failed (the config did not parse), if it did.
        public var error: String?
        /// When the configuration last loaded in full.
        public var lastSuccess: Date?

        /// Whether the last load succeeded in full.
        public var successful: Bool { failedUseCases.isEmpty && error == nil }
    }

    private let state = Mutex(Outcome(failedUseCases: [], error: nil, lastSuccess: nil))
    private let metrics: ServiceMetrics

    /// A status recording into `metrics` (nothing loaded yet).
    public init(metrics: ServiceMetrics) {
        self.metrics = metrics
    }

    /// The outcome of the last load.
    public var outcome: Outcome { state.withLock { $0 } }

    /// Records the start's load (which fails the start when it fails): successful, not counted as a reload.
    public func started() {
        let now = Date()
        state.withLock { $0 = Outcome(failedUseCases: [], error: nil, lastSuccess: now) }
        metrics.set("callveil_config_last_reload_successful", 1)
        metrics.set("callveil_config_last_reload_success_timestamp_seconds", now.timeIntervalSince1970)
    }

    /// Records a reload: `failed` use cases kept their previous versions, or `error` stopped it before any change.
    public func reloaded(failed: [String], error: String? = nil) {
        let now = Date()
        let outcome = state.withLock { s -> Outcome in
            s.failedUseCases = failed
            s.error = error
            if s.successful { s.lastSuccess = now }
            return s
        }
        metrics.increment("callveil_config_reloads_total", dimensions: [("result", outcome.successful ? "success" : "failure")])
        metrics.set("callveil_config_last_reload_successful", outcome.successful ? 1 : 0)
        if outcome.successful {
            metrics.set("callveil_config_last_reload_success_timestamp_seconds", now.timeIntervalSince1970)
        }
    }
}
