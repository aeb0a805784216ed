import Foundation
import Logging
import LookupEngine
import NIOCore
import PostgresNIO

/// The evaluation-key store in the shared PostgreSQL store, with the semantics of `SQLiteEvaluationKeyStore`
/// (replace per user and key config, expiry by upload age, a total-size limit with oldest-first eviction) for
/// every coordinator at once. Keys are sealed at rest and user identifiers stored as keyed hashes
/// (`StoreSealing`); expired keys are purged in batches so a purge never holds long locks.
public final class PostgresEvaluationKeyStore: EvaluationKeyStore {
    private let store: PostgresStore
    /// Keys uploaded longer ago than this are expired.
    public let maxAge: TimeInterval
    /// Total serialized bytes the store keeps; a write beyond it evicts the keys uploaded longest ago.
    public let maxBytes: Int
    /// Rows deleted per statement when purging or evicting.
    public let batchSize: Int
    private let clock: @Sendable () -> Date

    /// A key store over `store`.
    public init(store: PostgresStore, maxAge: TimeInterval = 30 * 24 * 3600, maxBytes: Int = 32 << 30,
                batchSize: Int = 1000, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.maxAge = maxAge
        self.maxBytes = maxBytes
        self.batchSize = max(batchSize, 1)
        self.clock = clock
    }

    private var cutoff: Double { clock().timeIntervalSince1970 - maxAge }

    /// The row's identity a sealed key is bound to.
    private static func context(tag: [UInt8], identifier: [UInt8]) -> [UInt8] { tag + [0] + identifier }

    public func store(_ key: StoredEvaluationKey) async throws -> KeyStoreUsage {
        let tag = store.sealing.userTag(key.user)
        let sealed = try store.sealing.seal(key.serialized, context: Self.context(tag: tag, identifier: key.identifier))
        let (maxBytes, batch) = (self.maxBytes, batchSize)
        let logger = store.logger
        return try await store.transaction("store evaluation key") { connection in
            try await connection.query("""
                INSERT INTO evaluation_keys (user_tag, identifier, device_timestamp, uploaded_at, key_bytes, sealed_key)
                VALUES (\(Data(tag)), \(Data(key.identifier)), \(Int64(bitPattern: key.timestamp)),
                        \(key.uploadedAt.timeIntervalSince1970), \(key.serialized.count), \(Data(sealed)))
                ON CONFLICT (user_tag, identifier) DO UPDATE SET device_timestamp = excluded.device_timestamp,
                    uploaded_at = excluded.uploaded_at, key_bytes = excluded.key_bytes, sealed_key = excluded.sealed_key
                """, logger: logger)
            var usage = try await Self.usage(connection, logger: logger)
            guard usage.bytes > maxBytes else { return usage }
            // Oldest uploads first (expired keys are the oldest), never the key just written.
            var excess = usage.bytes - maxBytes
            var evicted = 0
            while excess > 0 {
                var victims: [(ByteBuffer, ByteBuffer)] = []
                let rows = try await connection.query("""
                    SELECT user_tag, identifier, key_bytes FROM evaluation_keys
                    WHERE NOT (user_tag = \(Data(tag)) AND identifier = \(Data(key.identifier)))
                    ORDER BY uploaded_at, user_tag, identifier LIMIT \(batch)
                    """, logger: logger)
                for try await (victimTag, identifier, bytes) in rows.decode((ByteBuffer, ByteBuffer, Int).self) where excess > 0 {
                    victims.append((victimTag, identifier))
                    excess -= bytes
                }
                guard !victims.isEmpty else { break }
                try await connection.query("""
                    DELETE FROM evaluation_keys WHERE (user_tag, identifier) IN
                        (SELECT * FROM unnest(\(victims.map(\.0)), \(victims.map(\.1))))
                    """, logger: logger)
                evicted += victims.count
            }
            usage = try await Self.usage(connection, logger: logger)
            usage.evicted = evicted
            return usage
        }
    }

    public func usage() async throws -> KeyStoreUsage {
        let logger = store.logger
        return try await store.run("key store usage") { client in
            try await client.withConnection { connection in try await Self.usage(connection, logger: logger) }
        }
    }

    private static func usage(_ connection: PostgresConnection, logger: Logger) async throws -> KeyStoreUsage {
        let rows = try await connection.query(
            "SELECT COALESCE(SUM(keys), 0)::bigint, COALESCE(SUM(bytes), 0)::bigint FROM evaluation_key_usage",
            logger: logger)
        for try await (keys, bytes) in rows.decode((Int, Int).self) { return KeyStoreUsage(keys: keys, bytes: bytes) }
        return KeyStoreUsage(keys: 0, bytes: 0)
    }

    public func key(user: String, identifier: [UInt8]) async throws -> StoredEvaluationKey? {
        let tag = store.sealing.userTag(user)
        let cutoff = self.cutoff
        let row = try await store.run("read evaluation key") { client -> (Int64, Double, Data)? in
            let rows = try await client.query("""
                SELECT device_timestamp, uploaded_at, sealed_key FROM evaluation_keys
                WHERE user_tag = \(Data(tag)) AND identifier = \(Data(identifier)) AND uploaded_at >= \(cutoff)
                """)
            for try await row in rows.decode((Int64, Double, Data).self) { return row }
            return nil
        }
        guard let (timestamp, uploaded, sealed) = row else { return nil }
        let serialized = try store.sealing.open([UInt8](sealed), context: Self.context(tag: tag, identifier: identifier))
        return StoredEvaluationKey(user: user, identifier: identifier, timestamp: UInt64(bitPattern: timestamp),
                                   uploadedAt: Date(timeIntervalSince1970: uploaded), serialized: serialized)
    }

    public func timestamp(user: String, identifier: [UInt8]) async throws -> UInt64? {
        let tag = store.sealing.userTag(user)
        let cutoff = self.cutoff
        return try await store.run("read key timestamp") { client -> UInt64? in
            let rows = try await client.query("""
                SELECT device_timestamp FROM evaluation_keys
                WHERE user_tag = \(Data(tag)) AND identifier = \(Data(identifier)) AND uploaded_at >= \(cutoff)
                """)
            for try await timestamp in rows.decode(Int64.self) { return UInt64(bitPattern: timestamp) }
            return nil
        }
    }

    /// Deletes expired keys, `batchSize` rows per statement (each its own short transaction).
    public func purgeExpired() async throws -> Int {
        let cutoff = self.cutoff
        let batch = batchSize
        var purged = 0
        while true {
            let deleted = try await store.run("purge expired keys") { client -> Int in
                let rows = try await client.query("""
                    DELETE FROM evaluation_keys WHERE ctid IN (
                        SELECT ctid FROM evaluation_keys WHERE uploaded_at < \(cutoff) LIMIT \(batch))
                    RETURNING 1
                    """)
                var count = 0
                for try await _ in rows { count += 1 }
                return count
            }
            purged += deleted
            if deleted < batch { return purged }
        }
    }

    public func count() async throws -> Int {
        let cutoff = self.cutoff
        return try await store.run("count keys") { client -> Int in
            let rows = try await client.query("SELECT COUNT(*)::bigint FROM evaluation_keys WHERE uploaded_at >= \(cutoff)")
            for try await count in rows.decode(Int.self) { return count }
            return 0
        }
    }
}
