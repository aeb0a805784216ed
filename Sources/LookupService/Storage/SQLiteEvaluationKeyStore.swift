import Foundation
import GRDB

/// The evaluation-key store on one host: a SQLite database (WAL mode) created with owner-only permissions.
public final class SQLiteEvaluationKeyStore: EvaluationKeyStore {
    private let pool: DatabasePool
    /// Keys uploaded longer ago than this are expired.
    public let maxAge: TimeInterval
    private let clock: @Sendable () -> Date

    /// Opens (creating if needed) the store at `path`.
    public init(path: String, maxAge: TimeInterval = 30 * 24 * 3600, clock: @escaping @Sendable () -> Date = { Date() }) throws {
        self.maxAge = maxAge
        self.clock = clock
        pool = try SQLiteFile.open(path: path) { migrator in
            migrator.registerMigration("v1") { db in
                try db.execute(sql: """
                    CREATE TABLE evaluation_keys (
                        user TEXT NOT NULL,
                        identifier BLOB NOT NULL,
                        timestamp INTEGER NOT NULL,
                        uploaded_at REAL NOT NULL,
                        key BLOB NOT NULL,
                        PRIMARY KEY (user, identifier)
                    );
                    CREATE INDEX evaluation_keys_uploaded_at ON evaluation_keys (uploaded_at);
                    """)
            }
        }
    }

    private var cutoff: Double { clock().timeIntervalSince1970 - maxAge }

    public func store(_ key: StoredEvaluationKey) async throws {
        try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO evaluation_keys (user, identifier, timestamp, uploaded_at, key) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (user, identifier) DO UPDATE SET timestamp = excluded.timestamp,
                    uploaded_at = excluded.uploaded_at, key = excluded.key
                """, arguments: [key.user, Data(key.identifier), Int64(bitPattern: key.timestamp),
                                 key.uploadedAt.timeIntervalSince1970, Data(key.serialized)])
        }
    }

    public func key(user: String, identifier: [UInt8]) async throws -> StoredEvaluationKey? {
        let cutoff = self.cutoff
        return try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT timestamp, uploaded_at, key FROM evaluation_keys WHERE user = ? AND identifier = ? AND uploaded_at >= ?
                """, arguments: [user, Data(identifier), cutoff]) else { return nil }
            let timestamp: Int64 = row["timestamp"]
            let uploaded: Double = row["uploaded_at"]
            let key: Data = row["key"]
            return StoredEvaluationKey(user: user, identifier: identifier, timestamp: UInt64(bitPattern: timestamp),
                                       uploadedAt: Date(timeIntervalSince1970: uploaded), serialized: [UInt8](key))
        }
    }

    public func timestamp(user: String, identifier: [UInt8]) async throws -> UInt64? {
        let cutoff = self.cutoff
        return try await pool.read { db in
            try Int64.fetchOne(db, sql: """
                SELECT timestamp FROM evaluation_keys WHERE user = ? AND identifier = ? AND uploaded_at >= ?
                """, arguments: [user, Data(identifier), cutoff]).map { UInt64(bitPattern: $0) }
        }
    }

    public func purgeExpired() async throws -> Int {
        let cutoff = self.cutoff
        return try await pool.write { db in
            try db.execute(sql: "DELETE FROM evaluation_keys WHERE uploaded_at < ?", arguments: [cutoff])
            return db.changesCount
        }
    }

    public func count() async throws -> Int {
        let cutoff = self.cutoff
        return try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM evaluation_keys WHERE uploaded_at >= ?", arguments: [cutoff]) ?? 0
        }
    }
}
