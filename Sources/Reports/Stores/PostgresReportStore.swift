import Foundation
import LookupEngine
import LookupStorage
import NIOCore
import PostgresNIO

/// The report store shared by every front door, in PostgreSQL (migration 5): the same tables and rules as
/// `SQLiteReportStore`, report notes sealed at rest (`StoreSealing`, bound to number and reporter). Publishing a
/// list holds an advisory lock, so two coordinators publishing at once make one version, not two.
public final class PostgresReportStore: ReportStore {
    private let store: PostgresStore
    /// Advisory-lock key of list publication ("CVDL").
    static let lockKey: Int64 = 0x4356_444C

    /// Reports in `store`.
    public init(store: PostgresStore) {
        self.store = store
    }

    private static func noteContext(_ number: String, _ reporter: String) -> [UInt8] {
        Array("callveil report note|\(number)|\(reporter)".utf8)
    }

    public func record(_ report: NumberReport) async throws -> ReportOutcome {
        let logger = store.logger, sealing = store.sealing
        let context = Self.noteContext(report.number, report.reporter)
        let sealed = try report.note.map { Data(try sealing.seal(Array($0.utf8), context: context)) }
        return try await store.transaction("record report") { connection in
            let rows = try await connection.query("""
                SELECT verdict, channel, category, sealed_note, report_id FROM number_reports
                WHERE number = \(report.number) AND reporter = \(report.reporter) FOR UPDATE
                """, logger: logger)
            var existing: (String, String, String?, Data?, String)?
            for try await row in rows.decode((String, String, String?, Data?, String).self) { existing = row }
            guard let (verdict, channel, category, sealedNote, reportID) = existing else {
                try await connection.query("""
                    INSERT INTO number_reports (number, reporter, channel, verdict, category, sealed_note, report_id, first_seen, last_seen)
                    VALUES (\(report.number), \(report.reporter), \(report.channel.rawValue), \(report.verdict.rawValue), \(report.category),
                            \(sealed), \(report.reportID), \(report.receivedAt), \(report.receivedAt))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
                return .new
            }
            let note = try sealedNote.map { String(decoding: try sealing.open([UInt8]($0), context: context), as: UTF8.self) }
            if report.restates(reportID: reportID, verdict: verdict, channel: channel, category: category, note: note) { return .duplicate }
            try await connection.query("""
                UPDATE number_reports SET channel = \(report.channel.rawValue), verdict = \(report.verdict.rawValue),
                    category = \(report.category), sealed_note = \(sealed), report_id = \(report.reportID),
                    last_seen = GREATEST(last_seen, \(report.receivedAt))
                WHERE number = \(report.number) AND reporter = \(report.reporter)
                """, logger: logger)
            return .updated
        }
    }

    public func recordURLs(_ urls: [String], at time: Double) async throws {
        let logger = store.logger
        let unique = Array(Set(urls)).sorted()
        try await store.transaction("record URL report") { connection in
            for url in unique {
                try await connection.query("""
                    INSERT INTO url_reports (url, reports, first_seen, last_seen) VALUES (\(url), 1, \(time), \(time))
                    ON CONFLICT (url) DO UPDATE SET reports = url_reports.reports + 1,
                        last_seen = GREATEST(url_reports.last_seen, excluded.last_seen)
                    """, logger: logger)
            }
        }
    }

    public func reports(number: String?, limit: Int) async throws -> [NumberReport] {
        let logger = store.logger, sealing = store.sealing
        return try await store.run("list reports") { client in
            let rows = try await client.query("""
                SELECT number, reporter, channel, verdict, category, sealed_note, report_id, last_seen FROM number_reports
                WHERE (\(number)::text IS NULL OR number = \(number)) ORDER BY last_seen DESC, number, reporter LIMIT \(limit)
                """, logger: logger)
            var result: [NumberReport] = []
            for try await (number, reporter, channel, verdict, category, sealedNote, reportID, lastSeen)
                in rows.decode((String, String, String, String, String?, Data?, String, Double).self) {
                guard let channel = NumberReport.Channel(rawValue: channel), let verdict = NumberReport.Verdict(rawValue: verdict) else { continue }
                let note = try sealedNote.map {
                    String(decoding: try sealing.open([UInt8]($0), context: Self.noteContext(number, reporter)), as: UTF8.self)
                }
                result.append(NumberReport(reporter: reporter, number: number, channel: channel, verdict: verdict, category: category,
                                           note: note, reportID: reportID, receivedAt: lastSeen))
            }
            return result
        }
    }

    public func aggregates(minReporters: Int, limit: Int) async throws -> [NumberAggregate] {
        let logger = store.logger
        return try await store.run("aggregate reports") { client in
            let rows = try await client.query("""
                SELECT number, COUNT(*) FILTER (WHERE verdict = 'junk'), COUNT(*) FILTER (WHERE verdict = 'notJunk'),
                       MIN(first_seen), MAX(last_seen)
                FROM number_reports GROUP BY number HAVING COUNT(*) >= \(minReporters)
                ORDER BY 2 DESC, number LIMIT \(limit)
                """, logger: logger)
            var result: [NumberAggregate] = []
            for try await (number, junk, notJunk, first, last) in rows.decode((String, Int, Int, Double, Double).self) {
                result.append(NumberAggregate(number: number, junk: junk, notJunk: notJunk, firstSeen: first, lastSeen: last))
            }
            return result
        }
    }

    public func urlAggregates(limit: Int) async throws -> [URLAggregate] {
        let logger = store.logger
        return try await store.run("aggregate URL reports") { client in
            let rows = try await client.query("SELECT url, reports, first_seen, last_seen FROM url_reports ORDER BY reports DESC, url LIMIT \(limit)",
                                              logger: logger)
            var result: [URLAggregate] = []
            for try await (url, reports, first, last) in rows.decode((String, Int, Double, Double).self) {
                result.append(URLAggregate(url: url, reports: reports, firstSeen: first, lastSeen: last))
            }
            return result
        }
    }

    public func decide(number: String, action: ManualDecision.Action?, note: String, at time: Double) async throws {
        let logger = store.logger
        try await store.run("record decision") { client in
            if let action {
                try await client.query("""
                    INSERT INTO report_decisions (number, action, note, decided_at) VALUES (\(number), \(action.rawValue), \(note), \(time))
                    ON CONFLICT (number) DO UPDATE SET action = excluded.action, note = excluded.note, decided_at = excluded.decided_at
                    """, logger: logger)
            } else {
                try await client.query("DELETE FROM report_decisions WHERE number = \(number)", logger: logger)
            }
        }
    }

    public func decisions() async throws -> [ManualDecision] {
        let logger = store.logger
        return try await store.run("list decisions") { client in
            let rows = try await client.query("SELECT number, action, note, decided_at FROM report_decisions ORDER BY number", logger: logger)
            var result: [ManualDecision] = []
            for try await (number, action, note, at) in rows.decode((String, String, String, Double).self) {
                if let action = ManualDecision.Action(rawValue: action) {
                    result.append(ManualDecision(number: number, action: action, note: note, decidedAt: at))
                }
            }
            return result
        }
    }

    public func publish(_ list: DirectoryList, entries: [DirectoryEntry], at time: Double) async throws -> DirectoryPublication {
        let logger = store.logger
        let name = list.rawValue
        return try await store.transaction("publish list") { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
            var current = 0
            for try await version in try await connection.query(
                "SELECT COALESCE(MAX(version), 0) FROM directory_versions WHERE list = \(name)", logger: logger).decode(Int.self) {
                current = version
            }
            var present: [Int64: (label: String, reason: String)] = [:]
            for try await (number, label, reason) in try await connection.query(
                "SELECT number, label, reason FROM directory_entries WHERE list = \(name) AND removed IS NULL", logger: logger)
                .decode((Int64, String, String).self) {
                present[number] = (label, reason)
            }
            let plan = DirectoryPlan(present: present, desired: entries)
            for (number, reason) in plan.reasonUpdates {
                try await connection.query("""
                    UPDATE directory_entries SET reason = \(reason) WHERE list = \(name) AND number = \(number) AND removed IS NULL
                    """, logger: logger)
            }
            guard !plan.additions.isEmpty || !plan.removals.isEmpty else {
                return DirectoryPublication(version: current, additions: [], removals: [])
            }
            let version = current + 1
            for number in plan.removals {
                try await connection.query("""
                    UPDATE directory_entries SET removed = \(version) WHERE list = \(name) AND number = \(number) AND removed IS NULL
                    """, logger: logger)
            }
            for entry in plan.additions {
                try await connection.query("""
                    INSERT INTO directory_entries (list, number, label, reason, added, removed)
                    VALUES (\(name), \(entry.number), \(entry.label), \(entry.reason), \(version), NULL)
                    """, logger: logger)
            }
            try await connection.query("""
                INSERT INTO directory_versions (list, version, created_at, entries) VALUES (\(name), \(version), \(time), \(plan.count))
                """, logger: logger)
            return DirectoryPublication(version: version, additions: plan.additions.map(\.number), removals: plan.removals)
        }
    }

    public func currentVersion(_ list: DirectoryList) async throws -> Int {
        let logger = store.logger
        return try await store.run("list version") { client in
            var current = 0
            for try await version in try await client.query(
                "SELECT COALESCE(MAX(version), 0) FROM directory_versions WHERE list = \(list.rawValue)", logger: logger).decode(Int.self) {
                current = version
            }
            return current
        }
    }

    public func page(_ list: DirectoryList, version: Int, since: Int?, after: Int64?, limit: Int) async throws -> DirectoryPage {
        let logger = store.logger
        let name = list.rawValue, after = after ?? Int64.min, fetch = limit + 1
        return try await store.run("list page") { client in
            guard let since else {
                var additions: [DirectoryEntry] = []
                for try await (number, label, reason) in try await client.query("""
                    SELECT number, label, reason FROM directory_entries
                    WHERE list = \(name) AND added <= \(version) AND (removed IS NULL OR removed > \(version)) AND number > \(after)
                    ORDER BY number LIMIT \(fetch)
                    """, logger: logger).decode((Int64, String, String).self) {
                    additions.append(DirectoryEntry(number: number, label: label, reason: reason))
                }
                return DirectoryPage.merge(version: version, since: nil, additions: additions, removals: [], limit: limit)
            }
            var additions: [DirectoryEntry] = []
            for try await (number, label, reason) in try await client.query("""
                SELECT number, label, reason FROM directory_entries e
                WHERE list = \(name) AND added <= \(version) AND (removed IS NULL OR removed > \(version)) AND number > \(after)
                AND NOT EXISTS (SELECT 1 FROM directory_entries o WHERE o.list = e.list AND o.number = e.number AND o.label = e.label
                                AND o.added <= \(since) AND (o.removed IS NULL OR o.removed > \(since)))
                ORDER BY number LIMIT \(fetch)
                """, logger: logger).decode((Int64, String, String).self) {
                additions.append(DirectoryEntry(number: number, label: label, reason: reason))
            }
            var removals: [Int64] = []
            for try await number in try await client.query("""
                SELECT number FROM directory_entries e
                WHERE list = \(name) AND added <= \(since) AND (removed IS NULL OR removed > \(since)) AND number > \(after)
                AND NOT EXISTS (SELECT 1 FROM directory_entries o WHERE o.list = e.list AND o.number = e.number AND o.label = e.label
                                AND o.added <= \(version) AND (o.removed IS NULL OR o.removed > \(version)))
                ORDER BY number LIMIT \(fetch)
                """, logger: logger).decode(Int64.self) {
                removals.append(number)
            }
            return DirectoryPage.merge(version: version, since: since, additions: additions, removals: removals, limit: limit)
        }
    }

    public func entries(_ list: DirectoryList, version: Int) async throws -> [DirectoryEntry] {
        let logger = store.logger
        return try await store.run("list entries") { client in
            var result: [DirectoryEntry] = []
            for try await (number, label, reason) in try await client.query("""
                SELECT number, label, reason FROM directory_entries
                WHERE list = \(list.rawValue) AND added <= \(version) AND (removed IS NULL OR removed > \(version)) ORDER BY number
                """, logger: logger).decode((Int64, String, String).self) {
                result.append(DirectoryEntry(number: number, label: label, reason: reason))
            }
            return result
        }
    }
}
