import Foundation
import LookupEngine
import LookupStorage
import NIOCore
import PostgresNIO
import PrivacyPass

/// The Privacy Pass issuer keys of every coordinator, in the shared store: private keys sealed at rest
/// (`StoreSealing`, bound to their key id). Rotation is decided once for all coordinators: `ensure` reads the
/// stored ring under an advisory lock, applies the ring's rule (drop expired keys, give each tier an active key
/// and a successor when due), writes the result and loads it; a coordinator that comes second finds the
/// decision made. `refresh` loads what others decided.
public struct PostgresIssuerKeyStore: Sendable {
    private let store: PostgresStore
    /// Advisory-lock key of issuer-key changes ("CVIK").
    static let lockKey: Int64 = 0x4356_494B

    /// Issuer keys in `store`.
    public init(store: PostgresStore) {
        self.store = store
    }

    /// Makes the stored ring current for `tiers` (creating or rotating keys at most once across coordinators)
    /// and loads it into `ring`; returns whether this call changed the stored keys. New keys are generated
    /// outside any transaction (RSA generation takes seconds) and written only if the stored ring is still the
    /// one they were planned from; otherwise another coordinator decided first, and its keys are loaded instead.
    @discardableResult
    public func ensure(_ ring: IssuerKeyRing, tiers: [String]) async throws -> Bool {
        let sealing = store.sealing
        let logger = store.logger
        for _ in 0..<3 {
            let current = try await read()
            guard let planned = try await ComputePool.detached({ try ring.planned(from: current, tiers: tiers) }) else {
                ring.replace(current)
                return false
            }
            let basis = Set(current.map(\.issuer.tokenKey.keyID))
            let written = try await store.transaction("issuer keys") { connection -> [IssuerKeyRing.Entry]? in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
                let stored = try await Self.load(connection, sealing: sealing, logger: logger)
                guard Set(stored.map(\.issuer.tokenKey.keyID)) == basis else { return nil }  // someone decided first
                let kept = Set(planned.map(\.issuer.tokenKey.keyID))
                for entry in stored where !kept.contains(entry.issuer.tokenKey.keyID) {
                    try await connection.query("DELETE FROM issuer_keys WHERE key_id = \(Data(entry.issuer.tokenKey.keyID))", logger: logger)
                }
                for entry in planned where !basis.contains(entry.issuer.tokenKey.keyID) {
                    let keyID = entry.issuer.tokenKey.keyID
                    let sealed = try sealing.seal(Array(entry.issuer.pem.utf8), context: keyID)
                    try await connection.query("""
                        INSERT INTO issuer_keys (key_id, tier, not_before, not_after, sealed_pem)
                        VALUES (\(Data(keyID)), \(entry.tier), \(entry.notBefore.timeIntervalSince1970),
                                \(entry.notAfter.timeIntervalSince1970), \(Data(sealed)))
                        """, logger: logger)
                }
                return planned
            }
            if let written {
                ring.replace(written)
                return true
            }
        }
        try await refresh(ring)
        return false
    }

    private func read() async throws -> [IssuerKeyRing.Entry] {
        let sealing = store.sealing
        let logger = store.logger
        return try await store.run("read issuer keys") { client in
            try await client.withConnection { connection in try await Self.load(connection, sealing: sealing, logger: logger) }
        }
    }

    /// Loads the stored ring into `ring` (decisions other coordinators made).
    public func refresh(_ ring: IssuerKeyRing) async throws {
        ring.replace(try await read())
    }

    private static func load(_ connection: PostgresConnection, sealing: StoreSealing, logger: Logger) async throws -> [IssuerKeyRing.Entry] {
        var entries: [IssuerKeyRing.Entry] = []
        let rows = try await connection.query(
            "SELECT key_id, tier, not_before, not_after, sealed_pem FROM issuer_keys ORDER BY not_before, key_id", logger: logger)
        for try await (keyID, tier, notBefore, notAfter, sealed) in rows.decode((Data, String, Double, Double, Data).self) {
            let pem = try sealing.open([UInt8](sealed), context: [UInt8](keyID))
            let issuer: TokenIssuer
            do { issuer = try TokenIssuer(pem: String(decoding: pem, as: UTF8.self)) } catch {
                throw StoreError(.corrupt, "a stored issuer key does not parse")
            }
            guard issuer.tokenKey.keyID == [UInt8](keyID) else { throw StoreError(.corrupt, "a stored issuer key has another key id") }
            entries.append(IssuerKeyRing.Entry(tier: tier, issuer: issuer, notBefore: Date(timeIntervalSince1970: notBefore),
                                               notAfter: Date(timeIntervalSince1970: notAfter)))
        }
        return entries
    }
}
