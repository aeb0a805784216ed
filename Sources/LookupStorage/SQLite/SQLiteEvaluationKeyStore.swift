import Foundation
import GRDB
import LookupEngine

/// The evaluation-key store on one host: a SQLite database (WAL mode) created with owner-only permissions.
/// Triggers keep the number and total size of the stored keys in a one-row table, so the size limit is
/// enforced and reported without scanning the keys.
public final class SQLiteEvaluationKeyStore: EvaluationKeyStore {
    private let pool: DatabasePool
    /// Keys uploaded longer ago than this are expired.
    public let maxAge: TimeInterval
    /// Total serialized bytes the store keeps; a write beyond it evicts the keys uploaded longest ago.
    public let maxBytes: Int
    private let clock: @Sendable () -> Date

    /// Opens (creating if needed) the store at `path`.
    public init(path: String, maxAge: TimeInterval = 30 * 24 * 3600, maxBytes: Int = 32 << 30,
                clock: @escaping @Sendable () -> Date = { Date() }) throws {
        self.maxAge = maxAge
        self.maxBytes = maxBytes
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
            migrator.registerMigration("v2-usage-counters") { db in
                try db.execute(sql: """
                    CREATE TABLE key_usage (id INTEGER PRIMARY KEY CHECK (id = 0), keys INTEGER NOT NULL, bytes INTEGER NOT NULL);
                    INSERT INTO key_usage SELECT 0, COUNT(*), COALESCE(SUM(length(key)), 0) FROM evaluation_keys;
                    CREATE TRIGGER evaluation_keys_added AFTER INSERT ON evaluation_keys BEGIN
                        UPDATE key_usage SET keys = keys + 1, bytes = bytes + length(NEW.key) WHERE id = 0;
                    END;
                    CREATE TRIGGER evaluation_keys_removed AFTER DELETE ON evaluation_keys BEGIN
                        UPDATE key_usage SET keys = keys - 1, bytes = bytes - length(OLD.key) WHERE id = 0;
                    END;
                    CREATE TRIGGER evaluation_keys_replaced AFTER UPDATE OF key ON evaluation_keys BEGIN
                        UPDATE key_usage SET bytes = bytes - length(OLD.key) + length(NEW.key) WHERE id = 0;
                    END;
                    """)
            }
        }
    }

    private var cutoff: Double { clock().timeIntervalSince1970 - maxAge }

    public func store(_ key: StoredEvaluationKey) async throws -> KeyStoreUsage {
        let maxBytes = self.maxBytes
        return try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO evaluation_keys (user, identifier, timestamp, uploaded_at, key) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (user, identifier) DO UPDATE SET timestamp = excluded.timestamp,
                    uploaded_at = excluded.uploaded_at, key = excluded.key
                """, arguments: [key.user, Data(key.identifier), Int64(bitPattern: key.timestamp),
                                 key.uploadedAt.timeIntervalSince1970, Data(key.serialized)])
            var usage = try Self.usage(db)
            guard usage.bytes > maxBytes else { return usage }
            // Oldest uploads first (expired keys are the oldest), never the key just written.
            var excess = usage.bytes - maxBytes
            var victims: [Int64] = []
            let rows = try Row.fetchCursor(db, sql: """
                SELECT rowid, length(key) FROM evaluation_keys WHERE NOT (user = ? AND identifier = ?)
                ORDER BY uploaded_at, rowid
                """, arguments: [key.user, Data(key.identifier)])
            while excess > 0, let row = try rows.next() {
                victims.append(row[0])
                excess -= row[1] as Int
            }
            for chunk in stride(from: 0, to: victims.count, by: 500) {
                let ids = victims[chunk..<min(chunk + 500, victims.count)]
                try db.execute(sql: "DELETE FROM evaluation_keys WHERE rowid IN (\(ids.map { _ in "?" }.joined(separator: ",")))",
                               arguments: StatementArguments(Array(ids)))
            }
            usage = try Self.usage(db)
            usage.evicted = victims.count
            return usage
        }
    }

    public func usage() async throws -> KeyStoreUsage {
        try await pool.read { db in try Self.usage(db) }
    }

    private static func usage(_ db: Database) throws -> KeyStoreUsage {
        guard let row = try Row.fetchOne(db, sql: "SELECT keys, bytes FROM key_usage WHERE id = 0") else {
            return KeyStoreUsage(keys: 0, bytes: 0)
        }
        return KeyStoreUsage(keys: row[0], bytes: row[1])
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
