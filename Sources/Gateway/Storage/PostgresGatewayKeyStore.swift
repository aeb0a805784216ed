import Foundation
import LookupStorage
import NIOCore
import PostgresNIO
import ServiceCore

/// The Oblivious HTTP gateway keys of every gateway in the shared store, sealed at rest (`StoreSealing`, bound
/// to the key id). Rotation is decided once: `ensure` reads the stored keys under an advisory lock, applies the
/// ring's rule (drop expired keys, create the first key or a successor when due), writes the result and loads it
/// into the ring; a gateway that comes second finds the decision made and loads it.
public struct PostgresGatewayKeyStore: Sendable {
    private let store: PostgresStore
    /// Advisory-lock key of gateway-key changes ("CVGK").
    static let lockKey: Int64 = 0x4356_474B

    /// Gateway keys in `store`.
    public init(store: PostgresStore) {
        self.store = store
    }

    /// Makes the stored keys current and loads them into `ring`; returns whether this call changed them.
    @discardableResult
    public func ensure(_ ring: GatewayKeyRing) async throws -> Bool {
        let sealing = store.sealing
        let logger = store.logger
        let (entries, changed) = try await store.transaction("gateway keys") { connection -> ([GatewayKeyRing.Entry], Bool) in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
            let stored = try await Self.load(connection, ring: ring, sealing: sealing, logger: logger)
            guard let planned = try ring.planned(from: stored) else { return (stored, false) }
            let kept = Set(planned.map(\.key.keyID))
            for entry in stored where !kept.contains(entry.key.keyID) {
                try await connection.query("DELETE FROM gateway_keys WHERE key_id = \(Int16(entry.key.keyID))", logger: logger)
            }
            let existing = Set(stored.map(\.key.keyID))
            for entry in planned where !existing.contains(entry.key.keyID) {
                let sealed = try sealing.seal(Array(entry.key.privateKey.rawRepresentation), context: Self.context(entry.key.keyID))
                try await connection.query("""
                    INSERT INTO gateway_keys (key_id, created, not_after, sealed_key)
                    VALUES (\(Int16(entry.key.keyID)), \(entry.created.timeIntervalSince1970),
                            \(entry.notAfter.timeIntervalSince1970), \(Data(sealed)))
                    """, logger: logger)
            }
            return (planned, true)
        }
        try ring.replace(entries)
        return changed
    }

    /// The sealing context of a key: a label and its identifier.
    static func context(_ keyID: UInt8) -> [UInt8] { Array("callveil gateway key".utf8) + [keyID] }

    private static func load(_ connection: PostgresConnection, ring: GatewayKeyRing, sealing: StoreSealing,
                             logger: Logger) async throws -> [GatewayKeyRing.Entry] {
        var entries: [GatewayKeyRing.Entry] = []
        let rows = try await connection.query("SELECT key_id, created, not_after, sealed_key FROM gateway_keys ORDER BY key_id", logger: logger)
        for try await (keyID, created, notAfter, sealed) in rows.decode((Int16, Double, Double, Data).self) {
            guard let id = UInt8(exactly: keyID) else { throw StoreError(.corrupt, "a stored gateway key id is out of range") }
            let raw = try sealing.open([UInt8](sealed), context: context(id))
            do { entries.append(try ring.entry(keyID: id, rawPrivateKey: Data(raw), created: created, notAfter: notAfter)) } catch {
                throw StoreError(.corrupt, "a stored gateway key does not parse")
            }
        }
        return entries
    }
}

extension GatewayKeyRing {
    /// Makes the keys current where they live: once for every gateway in `sharedStore`, else in the key directory;
    /// returns whether they changed.
    @discardableResult
    public func ensure(sharedStore: PostgresStore?) async throws -> Bool {
        if let sharedStore { return try await PostgresGatewayKeyStore(store: sharedStore).ensure(self) }
        return try ensure()
    }
}
