import Foundation
import GRDB
import LookupEngine
import LookupProtocol
import Synchronization

/// The nonce store on one host, in SQLite: one table of nonces per issuer key (`spent_<key id hex>`, the nonce
/// its primary key; a spend is one write transaction, so it is atomic) and a `nonce_keys` row per key with its count. Spending checks
/// the key's count against the cap in the same transaction; forgetting a retired key drops its table, which costs
/// the same whatever it holds.
public final class SQLiteNonceStore: NonceStore {
    private let pool: DatabasePool
    /// Nonces kept per key at most.
    public let maxPerKey: Int
    private let created = Mutex<Set<String>>([])

    /// Opens (creating if needed) the store at `path`, owner-only; `maxPerKey` bounds each key's nonces.
    public init(path: String, maxPerKey: Int = 100_000_000) throws {
        self.maxPerKey = max(maxPerKey, 1)
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
            migrator.registerMigration("v2-per-key-tables") { db in
                try db.execute(sql: "CREATE TABLE nonce_keys (key_id BLOB PRIMARY KEY NOT NULL, count INTEGER NOT NULL) WITHOUT ROWID")
                let keys = try Data.fetchAll(db, sql: "SELECT DISTINCT key_id FROM spent_nonces").map { [UInt8]($0) }.filter { $0.count == 32 }
                for key in keys {
                    let table = Self.table(key)
                    try db.execute(sql: "CREATE TABLE \(table) (nonce BLOB PRIMARY KEY NOT NULL) WITHOUT ROWID")
                    try db.execute(sql: "INSERT INTO \(table) (nonce) SELECT nonce FROM spent_nonces WHERE key_id = ?", arguments: [Data(key)])
                    try db.execute(sql: "INSERT INTO nonce_keys (key_id, count) VALUES (?, ?)", arguments: [Data(key), db.changesCount])
                }
                try db.execute(sql: "DROP TABLE spent_nonces")
            }
        }
    }

    /// The table of a key's nonces: the key id is 32 bytes, written in hex, so the name is always safe.
    static func table(_ keyID: [UInt8]) -> String { "spent_" + keyID.hexString }

    public func spend(nonce: [UInt8], keyID: [UInt8]) async throws -> Bool {
        guard keyID.count == 32, nonce.count == 32 else { return false }
        let table = Self.table(keyID)
        let known = created.withLock { $0.contains(table) }
        let limit = maxPerKey
        let spent = try await pool.write { db -> Bool in
            if !known {
                try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(table) (nonce BLOB PRIMARY KEY NOT NULL) WITHOUT ROWID")
                try db.execute(sql: "INSERT OR IGNORE INTO nonce_keys (key_id, count) VALUES (?, 0)", arguments: [Data(keyID)])
            }
            try db.execute(sql: "INSERT OR IGNORE INTO \(table) (nonce) VALUES (?)", arguments: [Data(nonce)])
            guard db.changesCount == 1 else { return false }  // spent before (also when the key is full)
            try db.execute(sql: "UPDATE nonce_keys SET count = count + 1 WHERE key_id = ? AND count < ?", arguments: [Data(keyID), limit])
            guard db.changesCount == 1 else { throw NonceStoreFull(limit: limit) }  // rolls the insert back
            return true
        }
        if !known { created.withLock { _ = $0.insert(table) } }
        return spent
    }

    public func forget(keyIDsNotIn accepted: [[UInt8]]) async throws -> Int {
        let keep = Set(accepted)
        let retired = try await pool.read { db in try Data.fetchAll(db, sql: "SELECT key_id FROM nonce_keys") }.map { [UInt8]($0) }
            .filter { !keep.contains($0) }
        var forgotten = 0
        for key in retired {  // one short transaction per key: spends of live keys never wait long
            let table = Self.table(key)
            created.withLock { _ = $0.remove(table) }
            forgotten += try await pool.write { db in
                let count = try Int.fetchOne(db, sql: "SELECT count FROM nonce_keys WHERE key_id = ?", arguments: [Data(key)]) ?? 0
                try db.execute(sql: "DROP TABLE IF EXISTS \(table)")
                try db.execute(sql: "DELETE FROM nonce_keys WHERE key_id = ?", arguments: [Data(key)])
                return count
            }
        }
        return forgotten
    }

    public func count() async throws -> Int {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(count), 0) FROM nonce_keys") ?? 0 }
    }
}
