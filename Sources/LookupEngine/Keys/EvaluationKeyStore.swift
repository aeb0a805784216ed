import Foundation

/// Where a query finds a device's evaluation key: the store itself, or (in a cluster worker) the coordinator,
/// asked on a cache miss.
public protocol EvaluationKeyReader: Sendable {
    /// The unexpired key for (user, identifier).
    func key(user: String, identifier: [UInt8]) async throws -> StoredEvaluationKey?
}

/// Durable storage of the devices' evaluation keys, keyed by (User-Identifier, key-config hash), so one user
/// holds at most one key per key config a use case offers. Keys older than the store's maximum age are treated
/// as absent. An interface, so a cluster can put a shared store behind it.
public protocol EvaluationKeyStore: EvaluationKeyReader {
    /// Keys uploaded longer ago than this are expired (`.infinity`: the store does not expire keys itself).
    var maxAge: TimeInterval { get }
    /// Stores a key, replacing any key for the same (user, identifier); a store with a size limit evicts the
    /// keys uploaded longest ago to stay within it. Returns what the store holds afterwards.
    @discardableResult
    func store(_ key: StoredEvaluationKey) async throws -> KeyStoreUsage
    /// The device timestamp of the unexpired key for (user, identifier), without reading the key.
    func timestamp(user: String, identifier: [UInt8]) async throws -> UInt64?
    /// Deletes expired keys; returns how many.
    func purgeExpired() async throws -> Int
    /// Number of unexpired keys (a scan; for maintenance, not per request).
    func count() async throws -> Int
    /// What the store holds, from its counters.
    func usage() async throws -> KeyStoreUsage
}
