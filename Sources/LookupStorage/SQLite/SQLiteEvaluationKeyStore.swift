import Foundation
import GRDB
import LookupEngine

/// The evaluation-key store on one host: a SQLite database (WAL mode) created with owner-only permissions, and the
/// keys' bytes as files in `<path>-blobs` (`KeyBlobFiles`: one direct read per key miss). Triggers keep the number and
/// total size of the stored keys in a one-row table, so the size limit is enforced and reported without scanning the
/// keys. Keys stored before the files were introduced stay in the database and are read from there.
///
/// A write is atomic: the new file is listed in `key_blob_garbage` before it is written, and the transaction that
/// points a row at it takes it off the list and lists the files it replaces or evicts; those are deleted after the
/// commit. Whatever step fails, the listed files are deleted then or when the store is next opened, so the rows keep
/// serving the previous keys and no file is left behind.
public final class SQLiteEvaluationKeyStore: EvaluationKeyStore {
    private let pool: DatabasePool
    private let blobs: KeyBlobFiles
    /// Keys uploaded longer ago than this are expired.
    public let maxAge: TimeInterval
    /// Total serialized bytes the store keeps; a write beyond it evicts the keys uploaded longest ago.
    public let maxBytes: Int
    private let clock: @Sendable () -> Date

    /// Opens (creating if needed) the store at `path`. `directReads: false` reads the key files through the page cache
    /// (where direct reads are refused they fall back to it anyway).
    public init(path: String, maxAge: TimeInterval = 30 * 24 * 3600, maxBytes: Int = 32 << 30, directReads: Bool = true,
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
            // A row's key is either in `key` (blob NULL) or in the file `blob` of `size` bytes (key empty).
            migrator.registerMigration("v3-key-files") { db in
                try db.execute(sql: """
                    ALTER TABLE evaluation_keys ADD COLUMN blob TEXT;
                    ALTER TABLE evaluation_keys ADD COLUMN size INTEGER;
                    CREATE TABLE key_blob_garbage (name TEXT PRIMARY KEY) WITHOUT ROWID;
                    DROP TRIGGER evaluation_keys_added;
                    DROP TRIGGER evaluation_keys_removed;
                    DROP TRIGGER evaluation_keys_replaced;
                    CREATE TRIGGER evaluation_keys_added AFTER INSERT ON evaluation_keys BEGIN
                        UPDATE key_usage SET keys = keys + 1, bytes = bytes + IFNULL(NEW.size, length(NEW.key)) WHERE id = 0;
                    END;
                    CREATE TRIGGER evaluation_keys_removed AFTER DELETE ON evaluation_keys BEGIN
                        UPDATE key_usage SET keys = keys - 1, bytes = bytes - IFNULL(OLD.size, length(OLD.key)) WHERE id = 0;
                    END;
                    CREATE TRIGGER evaluation_keys_replaced AFTER UPDATE OF key, size ON evaluation_keys BEGIN
                        UPDATE key_usage SET bytes = bytes - IFNULL(OLD.size, length(OLD.key)) + IFNULL(NEW.size, length(NEW.key))
                            WHERE id = 0;
                    END;
                    """)
            }
        }
        blobs = try KeyBlobFiles(directory: path + "-blobs", direct: directReads)
        try collectGarbage()
    }

    /// Deletes the files `key_blob_garbage` lists (left by a write that failed or by a crash) and takes them off the
    /// list; a file that cannot be deleted stays listed for the next opening and does not stop this one.
    private func collectGarbage() throws {
        let names = try pool.read { db in try String.fetchAll(db, sql: "SELECT name FROM key_blob_garbage") }
        guard !names.isEmpty else { return }
        let removed = blobs.remove(names)
        try pool.write { db in try Self.forget(removed, db) }
    }

    /// Takes deleted files off the garbage list.
    private static func forget(_ names: [String], _ db: Database) throws {
        for chunk in stride(from: 0, to: names.count, by: 500) {
            let part = Array(names[chunk..<min(chunk + 500, names.count)])
            try db.execute(sql: "DELETE FROM key_blob_garbage WHERE name IN (\(part.map { _ in "?" }.joined(separator: ",")))",
                           arguments: StatementArguments(part))
        }
    }

    /// Lists files for deletion, in the transaction that stops using them.
    private static func list(_ names: [String], _ db: Database) throws {
        for name in names {
            try db.execute(sql: "INSERT OR IGNORE INTO key_blob_garbage (name) VALUES (?)", arguments: [name])
        }
    }

    /// Deletes the files of replaced, evicted and expired keys, or of a write that failed, once no committed row uses
    /// them. A failure here leaves them listed, to be collected when the store is next opened.
    private func deleteReleased(_ names: [String]) async {
        guard !names.isEmpty else { return }
        let removed = blobs.remove(names)
        do {
            try await pool.write { db in try Self.forget(removed, db) }
        } catch {
            // Still listed in key_blob_garbage.
        }
    }

    /// What a key read takes from its row: the key itself (stored before the files) or its file's name and size.
    private struct StoredRow: Sendable {
        var timestamp: Int64
        var uploadedAt: Double
        var blob: String?
        var size: Int?
        var inline: [UInt8]?
    }

    private var cutoff: Double { clock().timeIntervalSince1970 - maxAge }

    @discardableResult
    public func store(_ key: StoredEvaluationKey) async throws -> KeyStoreUsage {
        let maxBytes = self.maxBytes
        let name = KeyBlobFiles.newName()
        // Listed first, so that a crash at any later step leaves the file to be collected, not orphaned.
        try await pool.write { db in try db.execute(sql: "INSERT INTO key_blob_garbage (name) VALUES (?)", arguments: [name]) }
        let usage: KeyStoreUsage
        let dropped: [String]
        do {
            try blobs.write(key.serialized, name: name)
            (usage, dropped) = try await pool.write { db in try Self.commit(key, file: name, maxBytes: maxBytes, db) }
        } catch {
            await deleteReleased([name])
            throw error
        }
        await deleteReleased(dropped)
        return usage
    }

    /// Points the key's row at its file and evicts the keys uploaded longest ago beyond `maxBytes`, in one transaction;
    /// returns the usage and the files no row uses any more (listed for deletion).
    private static func commit(_ key: StoredEvaluationKey, file name: String, maxBytes: Int, _ db: Database) throws
        -> (KeyStoreUsage, [String]) {
        var dropped: [String] = []
        if let old = try String.fetchOne(db, sql: "SELECT blob FROM evaluation_keys WHERE user = ? AND identifier = ?",
                                         arguments: [key.user, Data(key.identifier)]) {
            dropped.append(old)
        }
        try db.execute(sql: """
            INSERT INTO evaluation_keys (user, identifier, timestamp, uploaded_at, key, blob, size) VALUES (?, ?, ?, ?, X'', ?, ?)
            ON CONFLICT (user, identifier) DO UPDATE SET timestamp = excluded.timestamp,
                uploaded_at = excluded.uploaded_at, key = excluded.key, blob = excluded.blob, size = excluded.size
            """, arguments: [key.user, Data(key.identifier), Int64(bitPattern: key.timestamp),
                             key.uploadedAt.timeIntervalSince1970, name, key.serialized.count])
        try db.execute(sql: "DELETE FROM key_blob_garbage WHERE name = ?", arguments: [name])
        var usage = try Self.usage(db)
        if usage.bytes > maxBytes {
            // Oldest uploads first (expired keys are the oldest), never the key just written.
            var excess = usage.bytes - maxBytes
            var victims: [Int64] = []
            let rows = try Row.fetchCursor(db, sql: """
                SELECT rowid, IFNULL(size, length(key)), blob FROM evaluation_keys WHERE NOT (user = ? AND identifier = ?)
                ORDER BY uploaded_at, rowid
                """, arguments: [key.user, Data(key.identifier)])
            while excess > 0, let row = try rows.next() {
                victims.append(row[0])
                excess -= row[1] as Int
                if let blob: String = row[2] { dropped.append(blob) }
            }
            for chunk in stride(from: 0, to: victims.count, by: 500) {
                let ids = victims[chunk..<min(chunk + 500, victims.count)]
                try db.execute(sql: "DELETE FROM evaluation_keys WHERE rowid IN (\(ids.map { _ in "?" }.joined(separator: ",")))",
                               arguments: StatementArguments(Array(ids)))
            }
            usage = try Self.usage(db)
            usage.evicted = victims.count
        }
        try list(dropped, db)
        return (usage, dropped)
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
        // A key replaced between reading its row and opening its file is read again (its new file).
        for _ in 0..<3 {
            let found = try await pool.read { db -> StoredRow? in
                guard let row = try Row.fetchOne(db, sql: """
                    SELECT timestamp, uploaded_at, blob, size, CASE WHEN blob IS NULL THEN key END AS key FROM evaluation_keys
                    WHERE user = ? AND identifier = ? AND uploaded_at >= ?
                    """, arguments: [user, Data(identifier), cutoff]) else { return nil }
                let inline: Data? = row["key"]
                return StoredRow(timestamp: row["timestamp"], uploadedAt: row["uploaded_at"], blob: row["blob"],
                                 size: row["size"], inline: inline.map { [UInt8]($0) })
            }
            guard let found else { return nil }
            let serialized: [UInt8]
            if let inline = found.inline {
                serialized = inline
            } else if let name = found.blob, let size = found.size {
                guard let bytes = try blobs.read(name, size: size) else { continue }
                serialized = bytes
            } else {
                throw StoreError(.corrupt, "A stored key's row names no file")
            }
            return StoredEvaluationKey(user: user, identifier: identifier, timestamp: UInt64(bitPattern: found.timestamp),
                                       uploadedAt: Date(timeIntervalSince1970: found.uploadedAt), serialized: serialized)
        }
        throw StoreError(.io, "A stored key's file is missing")
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
        let (count, dropped) = try await pool.write { db -> (Int, [String]) in
            let dropped = try String.fetchAll(db, sql: "SELECT blob FROM evaluation_keys WHERE uploaded_at < ? AND blob IS NOT NULL",
                                              arguments: [cutoff])
            try db.execute(sql: "DELETE FROM evaluation_keys WHERE uploaded_at < ?", arguments: [cutoff])
            let count = db.changesCount
            try Self.list(dropped, db)
            return (count, dropped)
        }
        await deleteReleased(dropped)
        return count
    }

    public func count() async throws -> Int {
        let cutoff = self.cutoff
        return try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM evaluation_keys WHERE uploaded_at >= ?", arguments: [cutoff]) ?? 0
        }
    }
}
