import Foundation
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
    /// and loads it into `ring`; returns whether this call changed the stored keys.
    @discardableResult
    public func ensure(_ ring: IssuerKeyRing, tiers: [String]) async throws -> Bool {
        let sealing = store.sealing
        let logger = store.logger
        let (entries, changed) = try await store.transaction("issuer keys") { connection -> ([IssuerKeyRing.Entry], Bool) in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
            let current = try await Self.load(connection, sealing: sealing, logger: logger)
            guard let planned = try ring.planned(from: current, tiers: tiers) else { return (current, false) }
            let kept = Set(planned.map(\.issuer.tokenKey.keyID))
            for entry in current where !kept.contains(entry.issuer.tokenKey.keyID) {
                try await connection.query("DELETE FROM issuer_keys WHERE key_id = \(Data(entry.issuer.tokenKey.keyID))", logger: logger)
            }
            let stored = Set(current.map(\.issuer.tokenKey.keyID))
            for entry in planned where !stored.contains(entry.issuer.tokenKey.keyID) {
                let keyID = entry.issuer.tokenKey.keyID
                let sealed = try sealing.seal(Array(entry.issuer.pem.utf8), context: keyID)
                try await connection.query("""
                    INSERT INTO issuer_keys (key_id, tier, not_before, not_after, sealed_pem)
                    VALUES (\(Data(keyID)), \(entry.tier), \(entry.notBefore.timeIntervalSince1970),
                            \(entry.notAfter.timeIntervalSince1970), \(Data(sealed)))
                    """, logger: logger)
            }
            return (planned, true)
        }
        ring.replace(entries)
        return changed
    }

    /// Loads the stored ring into `ring` (decisions other coordinators made).
    public func refresh(_ ring: IssuerKeyRing) async throws {
        let sealing = store.sealing
        let logger = store.logger
        let entries = try await store.run("read issuer keys") { client in
            try await client.withConnection { connection in try await Self.load(connection, sealing: sealing, logger: logger) }
        }
        ring.replace(entries)
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
