import Foundation
import GRDB
import GRDBSQLite
@testable import LookupStorage
import ServiceTestSupport
import Testing

/// The SQLite stores' connections keep a small page cache: large rows (evaluation keys) written and read leave
/// at most `SQLiteFile.pageCacheKibibytes` of pages in each connection, not SQLite's default 2 MiB.
@Suite("SQLite page cache")
struct SQLitePageCacheTests {
    /// The bytes of page cache `db`'s connection holds now.
    static func cacheUsed(_ db: Database) -> Int {
        var current: Int32 = 0, highest: Int32 = 0
        _ = sqlite3_db_status(db.sqliteConnection, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0)
        return Int(current)
    }

    @Test("Writing and reading eight 600 KB rows leaves the writer and the readers within the configured page cache")
    func boundedPageCache() async throws {
        let directory = try temporaryDirectory()
        let pool = try SQLiteFile.open(path: directory + "/blobs.sqlite") { migrator in
            migrator.registerMigration("v1") { db in try db.execute(sql: "CREATE TABLE blobs (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL)") }
        }
        let row = 600 << 10
        for id in 0..<8 {
            let bytes = Data((0..<row).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ id) })
            try await pool.write { db in try db.execute(sql: "INSERT INTO blobs (id, bytes) VALUES (?, ?)", arguments: [id, bytes]) }
        }
        let limit = SQLiteFile.pageCacheKibibytes << 10
        // Page cache memory includes each page's header: allow an eighth over the configured bytes.
        let slack = limit / 8
        let writer = try await pool.write { db in Self.cacheUsed(db) }
        #expect(writer <= limit + slack, "writer holds \(writer) B of pages")
        let readers = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for id in 0..<8 {
                group.addTask {
                    try await pool.read { db in
                        let bytes = try Data.fetchOne(db, sql: "SELECT bytes FROM blobs WHERE id = ?", arguments: [id])
                        return (bytes?.count ?? 0, Self.cacheUsed(db))
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(readers.allSatisfy { $0.0 == row }, "every row read back whole")
        let largest = readers.map(\.1).max() ?? 0
        print("page cache: writer \(writer) B, readers at most \(largest) B (limit \(limit) B)")
        #expect(largest <= limit + slack, "a reader holds \(largest) B of pages")
    }
}
