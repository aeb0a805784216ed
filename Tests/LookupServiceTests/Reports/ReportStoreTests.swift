import Foundation
import LookupService
import Reports
import ServiceTestSupport
import Testing

/// Both report stores hold the same rules: one report per reporter and number, replays change nothing, a list
/// publication makes a version only when something changed, every version stays readable; the shared store seals
/// notes at rest and decides a publication once when two front doors publish at the same time.
@Suite("Report stores (SQLite and PostgreSQL)")
struct ReportStoreTests {
    static func exercise(_ store: any ReportStore) async throws {
        let report = NumberReport(reporter: "aa", number: "+15551230001", channel: .sms, verdict: .junk, category: "scam",
                                  note: "said I won a car", reportID: "r1", receivedAt: 10)
        #expect(try await store.record(report) == .new)
        #expect(try await store.record(report) == .duplicate)
        var changed = report
        changed.verdict = .notJunk
        changed.reportID = "r2"
        changed.receivedAt = 20
        #expect(try await store.record(changed) == .updated)
        #expect(try await store.record(changed) == .duplicate)
        var other = report
        other.reporter = "bb"
        #expect(try await store.record(other) == .new)
        let aggregate = try #require(try await store.aggregates(minReporters: 2, limit: 10).first)
        #expect(aggregate == NumberAggregate(number: "+15551230001", junk: 1, notJunk: 1, firstSeen: 10, lastSeen: 20))
        #expect(try await store.reports(number: "+15551230001", limit: 10).first?.note == "said I won a car")

        let one = [DirectoryEntry(number: 15551230001, reason: "a"), DirectoryEntry(number: 15551230002, reason: "b")]
        #expect(try await store.publish(.blocking, entries: one, at: 1).version == 1)
        #expect(try await store.publish(.blocking, entries: one.map { var e = $0; e.reason += "!"; return e }, at: 2).version == 1)
        #expect(try await store.entries(.blocking, version: 1).map(\.reason) == ["a!", "b!"])
        let two = [DirectoryEntry(number: 15551230002, reason: "b"), DirectoryEntry(number: 15551230003, reason: "c")]
        let publication = try await store.publish(.blocking, entries: two, at: 3)
        #expect(publication == DirectoryPublication(version: 2, additions: [15551230003], removals: [15551230001]))
        #expect(try await store.entries(.blocking, version: 1).map(\.number) == [15551230001, 15551230002], "old versions stay readable")
        let page = try await store.page(.blocking, version: 2, since: 1, after: nil, limit: 10)
        #expect(page.additions.map(\.number) == [15551230003] && page.removals == [15551230001] && page.next == nil)
        try await store.decide(number: "+15551230009", action: .confirm, note: "n", at: 5)
        #expect(try await store.decisions().map(\.action) == [.confirm])
        try await store.decide(number: "+15551230009", action: nil, note: "", at: 6)
        #expect(try await store.decisions().isEmpty)
        try await store.recordURLs(["a.example/x", "a.example/x", "b.example"], at: 1)
        try await store.recordURLs(["a.example/x"], at: 2)
        #expect(try await store.urlAggregates(limit: 10).map(\.reports) == [2, 1])
    }

    @Test("SQLite")
    func sqlite() async throws {
        try await Self.exercise(try SQLiteReportStore(path: try temporaryDirectory() + "/reports.sqlite"))
    }

    @Test("PostgreSQL: same rules, notes sealed at rest, one version for concurrent publications")
    func postgres() async throws {
        let shared = try await TestPostgres.store()
        let store = PostgresReportStore(store: shared)
        try await Self.exercise(store)
        let rows = try await shared.run("read notes") { client in
            var notes: [Data] = []
            for try await note in try await client.query("SELECT sealed_note FROM number_reports WHERE sealed_note IS NOT NULL", logger: TestServer.logger).decode(Data.self) {
                notes.append(note)
            }
            return notes
        }
        #expect(!rows.isEmpty && rows.allSatisfy { !String(decoding: $0, as: UTF8.self).contains("won a car") })
        let entries = [DirectoryEntry(number: 15551239999, label: "Pizza", reason: "import")]
        let versions = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresReportStore(store: shared).publish(.identification, entries: entries, at: 9).version } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(versions == [1, 1, 1, 1])
        await shared.shutdown()
    }
}
