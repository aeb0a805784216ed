import Foundation
import Logging
import LookupEngine
import LookupProtocol
import NIOCore
import PostgresNIO

/// The spent-token nonces in the shared PostgreSQL store, for every coordinator at once. A spend is one
/// transaction: `INSERT … ON CONFLICT DO NOTHING` on the nonce (of concurrent spends of one nonce, on any
/// coordinator, exactly one inserts), then the key's counter is raised only below its cap, else the insert is
/// rolled back and the token refused. Nonces live in one partition per issuer key, so forgetting a retired key
/// detaches and drops a partition: cheap whatever it holds. The counter is split into slots by the nonce's first
/// byte when the cap is large, so concurrent spends of one key rarely wait on the same row; the cap then holds
/// per slot (each slot gets its share, rounded up).
public final class PostgresNonceStore: NonceStore {
    private let store: PostgresStore
    /// Nonces kept per key at most.
    public let maxPerKey: Int
    /// Counter slots per key: 16 from 16 million nonces per key up, else 1 (an exact cap).
    public let slots: Int

    /// A nonce store over `store`.
    public init(store: PostgresStore, maxPerKey: Int = 100_000_000) {
        self.store = store
        self.maxPerKey = max(maxPerKey, 1)
        slots = self.maxPerKey >= 16_000_000 ? 16 : 1
    }

    /// The partition of a key's nonces: the key id is 32 bytes, written in hex, so the name is always safe.
    static func partition(_ keyID: [UInt8]) -> String { "spent_nonces_" + keyID.hexString }

    public func spend(nonce: [UInt8], keyID: [UInt8]) async throws -> Bool {
        guard keyID.count == 32, nonce.count == 32 else { return false }
        do {
            return try await spendOnce(nonce: nonce, keyID: keyID)
        } catch let error as StoreError where error.sqlState == "23514" {
            // No partition for this key yet (the first spend of a new issuer key): create it, then spend.
            try await createPartition(keyID)
            return try await spendOnce(nonce: nonce, keyID: keyID)
        }
    }

    private func spendOnce(nonce: [UInt8], keyID: [UInt8]) async throws -> Bool {
        let logger = store.logger
        let slot = Int(nonce[0]) % slots
        let slotLimit = (maxPerKey + slots - 1) / slots
        let limit = maxPerKey
        return try await store.transaction("spend nonce") { connection in
            let inserted = try await connection.query("""
                INSERT INTO spent_nonces (key_id, nonce) VALUES (\(Data(keyID)), \(Data(nonce)))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger: logger)
            var fresh = false
            for try await _ in inserted { fresh = true }
            guard fresh else { return false }  // spent before (also when the key is full)
            let counted = try await connection.query("""
                UPDATE nonce_counts SET count = count + 1
                WHERE key_id = \(Data(keyID)) AND slot = \(slot) AND count < \(slotLimit) RETURNING 1
                """, logger: logger)
            var raised = false
            for try await _ in counted { raised = true }
            guard raised else { throw NonceStoreFull(limit: limit) }  // rolls the insert back
            return true
        }
    }

    /// Creates a key's partition and counters; concurrent creators (other coordinators) wait on an advisory lock
    /// and find them made.
    private func createPartition(_ keyID: [UInt8]) async throws {
        let logger = store.logger
        let table = Self.partition(keyID)
        let slots = self.slots
        let lock = Self.lockKey(keyID)
        try await store.transaction("create nonce partition") { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: logger)
            // DDL takes no bind parameters: the bound is the key id in hex, checked to be 32 bytes.
            try await connection.query(PostgresQuery(unsafeSQL: """
                CREATE TABLE IF NOT EXISTS \(table) PARTITION OF spent_nonces FOR VALUES IN ('\\x\(keyID.hexString)'::bytea)
                """), logger: logger)
            try await connection.query("""
                INSERT INTO nonce_counts (key_id, slot, count) SELECT \(Data(keyID)), s, 0 FROM generate_series(0, \(slots - 1)) AS s
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
    }

    public func forget(keyIDsNotIn accepted: [[UInt8]]) async throws -> Int {
        let keep = Set(accepted)
        let known = try await store.run("list nonce keys") { client -> [[UInt8]] in
            var keys: [[UInt8]] = []
            for try await key in try await client.query("SELECT DISTINCT key_id FROM nonce_counts").decode(ByteBuffer.self) {
                keys.append(Array(key.readableBytesView))
            }
            return keys
        }
        var forgotten = 0
        let logger = store.logger
        for key in known where !keep.contains(key) && key.count == 32 {
            let table = Self.partition(key)
            let lock = Self.lockKey(key)
            forgotten += try await store.run("forget nonces") { client -> Int in
                try await client.withConnection { connection -> Int in
                    // Coordinators forget on their own schedules: one at a time per key (a session lock, since
                    // DETACH … CONCURRENTLY runs outside a transaction); a coordinator that finds it taken skips.
                    var locked = false
                    for try await value in try await connection.query("SELECT pg_try_advisory_lock(\(lock))", logger: logger).decode(Bool.self) {
                        locked = value
                    }
                    guard locked else { return 0 }
                    do {
                        let count = try await Self.drop(table: table, key: key, connection: connection, logger: logger)
                        try await connection.query("SELECT pg_advisory_unlock(\(lock))", logger: logger)
                        return count
                    } catch {
                        _ = try? await connection.query("SELECT pg_advisory_unlock(\(lock))", logger: logger)
                        throw error
                    }
                }
            }
        }
        return forgotten
    }

    /// Detaches a key's partition without blocking spends of live keys, then drops it with its counters;
    /// returns the nonces it held. PostgreSQL lets at most one partition of a table be pending detach, so detaches
    /// of different keys (by this process or another) take turns under one session lock, and a detach another
    /// process left pending (it crashed mid-detach) is finished first.
    private static func drop(table: String, key: [UInt8], connection: PostgresConnection, logger: Logger) async throws -> Int {
        try await connection.query("SELECT pg_advisory_lock(\(detachLock))", logger: logger)
        do {
            var unfinished: [String] = []
            for try await name in try await connection.query(
                "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'spent_nonces'::regclass AND inhdetachpending",
                logger: logger).decode(String.self) {
                unfinished.append(name)
            }
            for name in unfinished where name != table && name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
                try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE spent_nonces DETACH PARTITION \(name) FINALIZE"), logger: logger)
            }
            // nil: not a partition (dropped before); false: attached; true: a detach left pending (a crash mid-detach).
            var pending: Bool?
            for try await value in try await connection.query(
                "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = to_regclass(\(table))", logger: logger).decode(Bool.self) {
                pending = value
            }
            if let pending {
                try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE spent_nonces DETACH PARTITION \(table) \(pending ? "FINALIZE" : "CONCURRENTLY")"),
                                           logger: logger)
            }
            try await connection.query("SELECT pg_advisory_unlock(\(detachLock))", logger: logger)
        } catch {
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(detachLock))", logger: logger)
            throw error
        }
        return try await connection.withTransaction(logger: logger) { connection -> Int in
            var count = 0
            for try await value in try await connection.query(
                "SELECT COALESCE(SUM(count), 0)::bigint FROM nonce_counts WHERE key_id = \(Data(key))", logger: logger).decode(Int.self) {
                count = value
            }
            try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(table)"), logger: logger)
            try await connection.query("DELETE FROM nonce_counts WHERE key_id = \(Data(key))", logger: logger)
            return count
        }
    }

    /// Advisory-lock key under which partitions of `spent_nonces` are detached one at a time ("CVDT").
    static let detachLock: Int64 = 0x4356_4454

    /// Advisory-lock key of one issuer key's nonces (its id's first 8 bytes).
    static func lockKey(_ keyID: [UInt8]) -> Int64 {
        Int64(bitPattern: keyID.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    public func count() async throws -> Int {
        try await store.run("count nonces") { client -> Int in
            for try await count in try await client.query("SELECT COALESCE(SUM(count), 0)::bigint FROM nonce_counts").decode(Int.self) {
                return count
            }
            return 0
        }
    }
}
