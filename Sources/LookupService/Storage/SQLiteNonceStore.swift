import Foundation
import GRDB

/// The nonce store on one host: a SQLite table whose primary key makes spending atomic.
public final class SQLiteNonceStore: NonceStore {
    private let pool: DatabasePool

    /// Opens (creating if needed) the store at `path`, owner-only.
    public init(path: String) throws {
        pool = try SQLiteFile.open(path: path) { migrator in
            migrator.registerMigration("v1") { db in
                try db.execute(sql: """
                    CREATE TABLE spent_nonces (
                        nonce BLOB PRIMARY KEY NOT NULL,
                        key_id BLOB NOT NULL,
                        spent_at REAL NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX spent_nonces_key ON spent_nonces (key_id);
                    """)
            }
        }
    }

    public func spend(nonce: [UInt8], keyID: [UInt8]) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO spent_nonces (nonce, key_id, spent_at) VALUES (?, ?, ?)",
                           arguments: [Data(nonce), Data(keyID), Date().timeIntervalSince1970])
            return db.changesCount == 1
        }
    }

    public func forget(keyIDsNotIn accepted: [[UInt8]]) async throws -> Int {
        try await pool.write { db in
            let placeholders = accepted.isEmpty ? "NULL" : Array(repeating: "?", count: accepted.count).joined(separator: ",")
            try db.execute(sql: "DELETE FROM spent_nonces WHERE key_id NOT IN (\(placeholders))",
                           arguments: StatementArguments(accepted.map { Data($0) }))
            return db.changesCount
        }
    }

    public func count() async throws -> Int {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM spent_nonces") ?? 0 }
    }
}
