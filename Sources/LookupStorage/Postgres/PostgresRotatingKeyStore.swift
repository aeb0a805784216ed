import Foundation
import LookupEngine
import NIOCore
import PostgresNIO

/// The keys of one `RotatingKeyRing` kind shared by every coordinator and gateway, in the shared store's
/// `rotating_keys` table, private keys sealed at rest (`StoreSealing`, bound to ring and identifier by the kind's
/// context). Rotation is decided once: new keys are planned outside any transaction (key generation may take
/// seconds) and written only if the stored ring is still the one they were planned from, under an advisory lock;
/// otherwise another process decided first, and its keys are loaded instead.
public struct PostgresRotatingKeyStore<Kind: RotatingKeyKind>: Sendable {
    private let store: PostgresStore
    /// Advisory-lock key of rotating-key changes ("CVRK").
    static var lockKey: Int64 { 0x4356_524B }

    /// Keys of `Kind` in `store`.
    public init(store: PostgresStore) {
        self.store = store
    }

    /// Makes the stored keys current for `groups` (at most one process creates or rotates) and loads them into
    /// `ring`; returns whether this call changed the stored keys.
    @discardableResult
    public func ensure(_ ring: RotatingKeyRing<Kind>, groups: [String]) async throws -> Bool {
        let (sealing, logger, kind) = (store.sealing, store.logger, ring.kind)
        for _ in 0..<3 {
            let current = try await read(kind)
            guard let planned = try await ComputePool.detached({ try ring.planned(from: current, groups: groups) }) else {
                try ring.replace(current)
                return false
            }
            let basis = Set(current.map { kind.identifier(of: $0.key) })
            let written = try await store.transaction("\(kind.ring) keys") { connection -> [RotatingKeyEntry<Kind.Key>]? in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
                let stored = try await Self.load(kind, connection, sealing: sealing, logger: logger)
                guard Set(stored.map { kind.identifier(of: $0.key) }) == basis else { return nil }  // someone decided first
                let kept = Set(planned.map { kind.identifier(of: $0.key) })
                for entry in stored where !kept.contains(kind.identifier(of: entry.key)) {
                    try await connection.query(
                        "DELETE FROM rotating_keys WHERE ring = \(kind.ring) AND key_id = \(Data(kind.identifier(of: entry.key)))",
                        logger: logger)
                }
                for entry in planned where !basis.contains(kind.identifier(of: entry.key)) {
                    let identifier = kind.identifier(of: entry.key)
                    let sealed = try sealing.seal(Array(kind.secret(of: entry.key)), context: kind.sealingContext(identifier: identifier))
                    try await connection.query("""
                        INSERT INTO rotating_keys (ring, key_id, key_group, not_before, not_after, sealed_key)
                        VALUES (\(kind.ring), \(Data(identifier)), \(entry.group), \(entry.notBefore.timeIntervalSince1970),
                                \(entry.notAfter.timeIntervalSince1970), \(Data(sealed)))
                        """, logger: logger)
                }
                return planned
            }
            if let written {
                try ring.replace(written)
                return true
            }
        }
        try await refresh(ring)
        return false
    }

    /// Loads the stored keys into `ring` (decisions other processes made).
    public func refresh(_ ring: RotatingKeyRing<Kind>) async throws {
        try ring.replace(try await read(ring.kind))
    }

    private func read(_ kind: Kind) async throws -> [RotatingKeyEntry<Kind.Key>] {
        let (sealing, logger) = (store.sealing, store.logger)
        return try await store.run("read \(kind.ring) keys") { client in
            try await client.withConnection { connection in try await Self.load(kind, connection, sealing: sealing, logger: logger) }
        }
    }

    private static func load(_ kind: Kind, _ connection: PostgresConnection, sealing: StoreSealing,
                             logger: Logger) async throws -> [RotatingKeyEntry<Kind.Key>] {
        var entries: [RotatingKeyEntry<Kind.Key>] = []
        let rows = try await connection.query("""
            SELECT key_id, key_group, not_before, not_after, sealed_key FROM rotating_keys
            WHERE ring = \(kind.ring) ORDER BY not_before, key_id
            """, logger: logger)
        for try await (keyID, group, notBefore, notAfter, sealed) in rows.decode((Data, String, Double, Double, Data).self) {
            let identifier = [UInt8](keyID)
            let secret = try sealing.open([UInt8](sealed), context: kind.sealingContext(identifier: identifier))
            let key: Kind.Key
            do { key = try kind.key(identifier: identifier, secret: Data(secret)) } catch {
                throw StoreError(.corrupt, "a stored \(kind.ring) key does not parse or has another identifier")
            }
            entries.append(RotatingKeyEntry(group: group, key: key, notBefore: Date(timeIntervalSince1970: notBefore),
                                            notAfter: Date(timeIntervalSince1970: notAfter)))
        }
        return entries
    }
}
