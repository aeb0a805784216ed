import Logging
import LookupEngine
import LookupStorage
import Reports

extension ServiceConfig {
    /// The report store: the shared PostgreSQL store's when there is one, else the SQLite file of `reports`;
    /// nil when no report, feed or URL-filter section is configured.
    public func makeReportStore(shared: PostgresStore?) throws -> (any ReportStore)? {
        guard let reports else { return nil }
        if let shared { return PostgresReportStore(store: shared) }
        return try SQLiteReportStore(path: reports.database ?? "reports.sqlite")
    }

    /// Opens the report store for a command-line tool: connects to the shared store when the config names one
    /// (the returned store must then be shut down).
    public func openReportStore(logger: Logger) async throws -> (store: any ReportStore, shared: PostgresStore?) {
        var shared: PostgresStore?
        if let database {
            let sealing = try StoreSealing.load(path: database.keyEncryptionKeyFile ?? "store.kek")
            shared = try await PostgresStore.connect(try database.settings(), sealing: sealing, logger: logger)
        }
        guard let store = try makeReportStore(shared: shared) else {
            await shared?.shutdown()
            throw ConfigError("the service config has no reports, callDirectory or urlFilter section")
        }
        return (store, shared)
    }
    /// Junk reports from Unwanted Communication Reporting extensions (`POST /classification-report`), the
    /// reporter credentials apps fetch for them, and the policy that turns reports into the blocking list. The
    /// store is `database` (SQLite) unless the service config names a shared PostgreSQL database.
    public struct Reports: Codable, Sendable, Equatable {
        /// Off when false (default on when the section is present).
        public var enabled: Bool?
        /// SQLite file of reports and lists on this host (default `reports.sqlite`).
        public var database: String?
        /// The reporter-credential key (32 bytes, created when missing; default `reporter.key`); the same file on
        /// every front door.
        public var reporterKeyFile: String?
        /// Largest report body (default 16384 bytes).
        public var maxReportBytes: Int?
        /// Reports per reporter per hour, sustained (default 30).
        public var reportsPerHour: Double?
        /// Reports a reporter may send at once (default 10).
        public var reportBurst: Int?
        /// The blocking rule.
        public var policy: ReportPolicy?

        /// Settings.
        public init(policy: ReportPolicy? = nil) { self.policy = policy }

        func validate() throws {
            if let b = maxReportBytes, b < 256 || b > 1 << 20 { throw ConfigError("reports.maxReportBytes \(b) out of range (256…1 MiB)") }
            if let r = reportsPerHour, !(r > 0 && r <= 1_000_000) { throw ConfigError("reports.reportsPerHour \(r) out of range") }
            if let b = reportBurst, b < 1 || b > 1_000_000 { throw ConfigError("reports.reportBurst \(b) out of range") }
            try policy?.validate()
        }
    }

    /// The Call Directory feed (`GET /call-directory/blocking`, `…/identification`).
    public struct CallDirectory: Codable, Sendable, Equatable {
        /// Entries per page at most (default 20,000: about 0.5 MB of JSON before gzip), so an extension that
        /// loads a page at a time stays within its memory limit.
        public var maxEntriesPerPage: Int?

        /// Settings.
        public init(maxEntriesPerPage: Int? = nil) { self.maxEntriesPerPage = maxEntriesPerPage }

        func validate() throws {
            if let n = maxEntriesPerPage, n < 1 || n > 1_000_000 { throw ConfigError("callDirectory.maxEntriesPerPage \(n) out of range") }
        }
    }

    /// The URL filter's Bloom prefilter download (`GET /url-filter/prefilter`) and its reports (`POST /report`).
    public struct URLFilter: Codable, Sendable, Equatable {
        /// The folder `callveil url-filter build` wrote (`prefilter.bin`, `prefilter.json`).
        public var prefilterDirectory: String
        /// URLs per report at most (default 100).
        public var maxURLsPerReport: Int?

        /// Settings.
        public init(prefilterDirectory: String, maxURLsPerReport: Int? = nil) {
            self.prefilterDirectory = prefilterDirectory
            self.maxURLsPerReport = maxURLsPerReport
        }

        func validate() throws {
            if let n = maxURLsPerReport, n < 1 || n > 10_000 { throw ConfigError("urlFilter.maxURLsPerReport \(n) out of range") }
        }
    }
}
