import Foundation
import GRDB
import LookupEngine
import LookupStorage

/// The report store on one host, in SQLite (`reports.database`, default `reports.sqlite`): reports keyed by
/// number and reporter, URL counts, decisions, and the Call Directory lists as intervals of versions (an entry row
/// holds the version that added it and the one that removed it), so every version stays readable.
public final class SQLiteReportStore: ReportStore {
    private let pool: DatabasePool

    /// Opens (creating if needed) the store at `path`, owner-only.
    public init(path: String) throws {
        pool = try SQLiteFile.open(path: path) { migrator in
            migrator.registerMigration("v1") { db in
                try db.execute(sql: """
                    CREATE TABLE number_reports (
                        number TEXT NOT NULL, reporter TEXT NOT NULL, channel TEXT NOT NULL, verdict TEXT NOT NULL,
                        category TEXT, note TEXT, report_id TEXT NOT NULL, first_seen REAL NOT NULL, last_seen REAL NOT NULL,
                        PRIMARY KEY (number, reporter)
                    ) WITHOUT ROWID;
                    CREATE TABLE url_reports (url TEXT PRIMARY KEY NOT NULL, reports INTEGER NOT NULL,
                                              first_seen REAL NOT NULL, last_seen REAL NOT NULL) WITHOUT ROWID;
                    CREATE TABLE decisions (number TEXT PRIMARY KEY NOT NULL, action TEXT NOT NULL, note TEXT NOT NULL,
                                            decided_at REAL NOT NULL) WITHOUT ROWID;
                    CREATE TABLE directory_entries (list TEXT NOT NULL, number INTEGER NOT NULL, label TEXT NOT NULL,
                                                    reason TEXT NOT NULL, added INTEGER NOT NULL, removed INTEGER,
                                                    PRIMARY KEY (list, number, added)) WITHOUT ROWID;
                    CREATE TABLE directory_versions (list TEXT NOT NULL, version INTEGER NOT NULL, created_at REAL NOT NULL,
                                                     entries INTEGER NOT NULL, PRIMARY KEY (list, version)) WITHOUT ROWID;
                    """)
            }
        }
    }

    public func record(_ report: NumberReport) async throws -> ReportOutcome {
        try await pool.write { db in
            let row = try Row.fetchOne(db, sql: "SELECT verdict, channel, category, note, report_id FROM number_reports WHERE number = ? AND reporter = ?",
                                       arguments: [report.number, report.reporter])
            guard let row else {
                try db.execute(sql: """
                    INSERT INTO number_reports (number, reporter, channel, verdict, category, note, report_id, first_seen, last_seen)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [report.number, report.reporter, report.channel.rawValue, report.verdict.rawValue, report.category,
                                     report.note, report.reportID, report.receivedAt, report.receivedAt])
                return .new
            }
            if report.restates(reportID: row["report_id"], verdict: row["verdict"], channel: row["channel"],
                               category: row["category"], note: row["note"]) { return .duplicate }
            try db.execute(sql: """
                UPDATE number_reports SET channel = ?, verdict = ?, category = ?, note = ?, report_id = ?, last_seen = MAX(last_seen, ?)
                WHERE number = ? AND reporter = ?
                """, arguments: [report.channel.rawValue, report.verdict.rawValue, report.category, report.note, report.reportID,
                                 report.receivedAt, report.number, report.reporter])
            return .updated
        }
    }

    public func recordURLs(_ urls: [String], at time: Double) async throws {
        try await pool.write { db in
            for url in Set(urls) {
                try db.execute(sql: """
                    INSERT INTO url_reports (url, reports, first_seen, last_seen) VALUES (?, 1, ?, ?)
                    ON CONFLICT (url) DO UPDATE SET reports = reports + 1, last_seen = MAX(last_seen, excluded.last_seen)
                    """, arguments: [url, time, time])
            }
        }
    }

    public func reports(number: String?, limit: Int) async throws -> [NumberReport] {
        try await pool.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT * FROM number_reports WHERE (?1 IS NULL OR number = ?1) ORDER BY last_seen DESC, number, reporter LIMIT ?2
                """, arguments: [number, limit])
            return rows.compactMap { row in
                guard let channel = NumberReport.Channel(rawValue: row["channel"]), let verdict = NumberReport.Verdict(rawValue: row["verdict"]) else { return nil }
                return NumberReport(reporter: row["reporter"], number: row["number"], channel: channel, verdict: verdict,
                                    category: row["category"], note: row["note"], reportID: row["report_id"], receivedAt: row["last_seen"])
            }
        }
    }

    public func aggregates(minReporters: Int, limit: Int) async throws -> [NumberAggregate] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT number, SUM(verdict = 'junk') AS junk, SUM(verdict = 'notJunk') AS not_junk,
                       MIN(first_seen) AS first_seen, MAX(last_seen) AS last_seen
                FROM number_reports GROUP BY number HAVING COUNT(*) >= ? ORDER BY junk DESC, number LIMIT ?
                """, arguments: [minReporters, limit]).map {
                NumberAggregate(number: $0["number"], junk: $0["junk"], notJunk: $0["not_junk"], firstSeen: $0["first_seen"], lastSeen: $0["last_seen"])
            }
        }
    }

    public func urlAggregates(limit: Int) async throws -> [URLAggregate] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM url_reports ORDER BY reports DESC, url LIMIT ?", arguments: [limit]).map {
                URLAggregate(url: $0["url"], reports: $0["reports"], firstSeen: $0["first_seen"], lastSeen: $0["last_seen"])
            }
        }
    }

    public func decide(number: String, action: ManualDecision.Action?, note: String, at time: Double) async throws {
        try await pool.write { db in
            if let action {
                try db.execute(sql: "INSERT OR REPLACE INTO decisions (number, action, note, decided_at) VALUES (?, ?, ?, ?)",
                               arguments: [number, action.rawValue, note, time])
            } else {
                try db.execute(sql: "DELETE FROM decisions WHERE number = ?", arguments: [number])
            }
        }
    }

    public func decisions() async throws -> [ManualDecision] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM decisions ORDER BY number").compactMap { row in
                ManualDecision.Action(rawValue: row["action"]).map {
                    ManualDecision(number: row["number"], action: $0, note: row["note"], decidedAt: row["decided_at"])
                }
            }
        }
    }

    public func publish(_ list: DirectoryList, entries: [DirectoryEntry], at time: Double) async throws -> DirectoryPublication {
        try await pool.write { db in
            let current = try Int.fetchOne(db, sql: "SELECT COALESCE(MAX(version), 0) FROM directory_versions WHERE list = ?", arguments: [list.rawValue]) ?? 0
            var present: [Int64: (label: String, reason: String, added: Int64)] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT number, label, reason, added FROM directory_entries WHERE list = ? AND removed IS NULL",
                                        arguments: [list.rawValue]) {
                present[row["number"]] = (row["label"], row["reason"], row["added"])
            }
            let plan = DirectoryPlan(present: present.mapValues { ($0.label, $0.reason) }, desired: entries)
            for (number, reason) in plan.reasonUpdates {
                try db.execute(sql: "UPDATE directory_entries SET reason = ? WHERE list = ? AND number = ? AND removed IS NULL",
                               arguments: [reason, list.rawValue, number])
            }
            guard !plan.additions.isEmpty || !plan.removals.isEmpty else {
                return DirectoryPublication(version: current, additions: [], removals: [])
            }
            let version = current + 1
            for number in plan.removals {
                try db.execute(sql: "UPDATE directory_entries SET removed = ? WHERE list = ? AND number = ? AND removed IS NULL",
                               arguments: [version, list.rawValue, number])
            }
            for entry in plan.additions {
                try db.execute(sql: "INSERT INTO directory_entries (list, number, label, reason, added, removed) VALUES (?, ?, ?, ?, ?, NULL)",
                               arguments: [list.rawValue, entry.number, entry.label, entry.reason, version])
            }
            try db.execute(sql: "INSERT INTO directory_versions (list, version, created_at, entries) VALUES (?, ?, ?, ?)",
                           arguments: [list.rawValue, version, time, plan.count])
            return DirectoryPublication(version: version, additions: plan.additions.map(\.number), removals: plan.removals)
        }
    }

    public func currentVersion(_ list: DirectoryList) async throws -> Int {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COALESCE(MAX(version), 0) FROM directory_versions WHERE list = ?", arguments: [list.rawValue]) ?? 0
        }
    }

    /// Rows present at version `v` (`?v`), as SQL over `directory_entries e`.
    private static func present(_ alias: String, _ v: String) -> String {
        "\(alias).added <= \(v) AND (\(alias).removed IS NULL OR \(alias).removed > \(v))"
    }

    public func page(_ list: DirectoryList, version: Int, since: Int?, after: Int64?, limit: Int) async throws -> DirectoryPage {
        try await pool.read { db in
            let after = after ?? Int64.min
            var arguments: StatementArguments = [list.rawValue, version, after, limit + 1]
            guard let since else {
                let additions = try Row.fetchAll(db, sql: """
                    SELECT number, label, reason FROM directory_entries e WHERE list = ?1 AND \(Self.present("e", "?2")) AND number > ?3
                    ORDER BY number LIMIT ?4
                    """, arguments: arguments).map { DirectoryEntry(number: $0["number"], label: $0["label"], reason: $0["reason"]) }
                return DirectoryPage.merge(version: version, since: nil, additions: additions, removals: [], limit: limit)
            }
            arguments += [since]
            let additions = try Row.fetchAll(db, sql: """
                SELECT number, label, reason FROM directory_entries e WHERE list = ?1 AND \(Self.present("e", "?2")) AND number > ?3
                AND NOT EXISTS (SELECT 1 FROM directory_entries o WHERE o.list = ?1 AND o.number = e.number AND o.label = e.label
                                AND \(Self.present("o", "?5")))
                ORDER BY number LIMIT ?4
                """, arguments: arguments).map { DirectoryEntry(number: $0["number"], label: $0["label"], reason: $0["reason"]) }
            let removals = try Int64.fetchAll(db, sql: """
                SELECT number FROM directory_entries e WHERE list = ?1 AND \(Self.present("e", "?5")) AND number > ?3
                AND NOT EXISTS (SELECT 1 FROM directory_entries o WHERE o.list = ?1 AND o.number = e.number AND o.label = e.label
                                AND \(Self.present("o", "?2")))
                ORDER BY number LIMIT ?4
                """, arguments: arguments)
            return DirectoryPage.merge(version: version, since: since, additions: additions, removals: removals, limit: limit)
        }
    }

    public func entries(_ list: DirectoryList, version: Int) async throws -> [DirectoryEntry] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT number, label, reason FROM directory_entries e WHERE list = ?1 AND \(Self.present("e", "?2")) ORDER BY number",
                             arguments: [list.rawValue, version]).map { DirectoryEntry(number: $0["number"], label: $0["label"], reason: $0["reason"]) }
        }
    }
}
