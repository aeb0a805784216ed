import Foundation
import Hummingbird
import LookupEngine
import LookupStorage
import Reports
import ServiceCore

/// The provider's feeds as one server runs them: the report store, reporter credentials and per-reporter rate
/// (classification reports), the Call Directory lists and the URL filter, as configured at start.
public struct ProviderFeeds: Sendable {
    /// Reports and the Call Directory lists, when any of `reports`, `callDirectory`, `urlFilter` is configured.
    public let store: (any ReportStore)?
    /// Reporter credentials, when classification reports are taken.
    public let credentials: ReporterCredential?
    /// The report, feed and URL-filter settings as read at start.
    let reports: ServiceConfig.Reports?
    let callDirectory: ServiceConfig.CallDirectory?
    let urlFilter: ServiceConfig.URLFilter?
    /// Reports per reporter.
    let limiter: IssuanceLimiter

    /// Opens the report store where `config` says (the shared store when there is one).
    init(config: ServiceConfig, shared: PostgresStore?) throws {
        store = try config.makeReportStore(shared: shared)
        if let reports = config.reports, reports.enabled ?? true {
            credentials = try ReporterCredential.load(path: reports.reporterKeyFile ?? "reporter.key")
        } else {
            credentials = nil
        }
        (reports, callDirectory, urlFilter) = (config.reports, config.callDirectory, config.urlFilter)
        let perHour = config.reports?.reportsPerHour ?? 30
        limiter = IssuanceLimiter(rates: ["reporter": .init(perSecond: perHour / 3600, burst: Double(config.reports?.reportBurst ?? 10))])
    }

    /// Adds the report, Call Directory and URL-filter routes that are configured.
    func addRoutes(to router: RouterGroup<LookupRequestContext>, verifier: PrivacyPassVerifier?,
                   tierOf: @escaping @Sendable (String) -> String?, metrics: ServiceMetrics) {
        guard let store else { return }
        if let credentials, let reports {
            ReportRoutes.add(to: router, settings: .init(store: store, credentials: credentials, limiter: limiter,
                                                         maxReportBytes: reports.maxReportBytes ?? 16384,
                                                         tierOf: tierOf, metrics: metrics))
        }
        if let callDirectory {
            CallDirectoryRoutes.add(to: router, store: store, maxEntriesPerPage: callDirectory.maxEntriesPerPage ?? 20_000, metrics: metrics)
        }
        if let urlFilter {
            URLFilterRoutes.add(to: router, prefilterDirectory: urlFilter.prefilterDirectory, metrics: metrics)
            ReportRoutes.addURLReports(to: router, store: store, verifier: verifier, maxURLs: urlFilter.maxURLsPerReport ?? 100, metrics: metrics)
        }
    }
}
