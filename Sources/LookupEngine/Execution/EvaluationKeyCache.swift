import BFV
import Synchronization

/// Parsed evaluation keys kept ready for queries, least recently used dropped first, bounded in bytes.
/// Parsing a key costs milliseconds; a device sends several queries with the same key.
public final class EvaluationKeyCache: Sendable {
    /// Cache key: the key's owner, config hash and device timestamp (a re-upload is a different entry).
    public struct Key: Hashable, Sendable {
        let user: String
        let identifier: [UInt8]
        let timestamp: UInt64
    }

    private struct Entry {
        let key: EvaluationKey
        let bytes: Int
        var lastUse: UInt64
        /// When the key was uploaded (seconds since 1970; 0 unknown), for expiry.
        let uploadedAt: Double
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Memory budget in bytes.
    public let capacity: Int

    /// A cache holding at most `capacity` bytes of parsed keys.
    public init(capacity: Int) {
        self.capacity = capacity
    }

    /// The cache key for a stored key.
    public static func key(user: String, identifier: [UInt8], timestamp: UInt64) -> Key {
        Key(user: user, identifier: identifier, timestamp: timestamp)
    }

    /// The cached key, marking it used.
    public func get(_ key: Key) -> EvaluationKey? {
        state.withLock { s in
            guard var entry = s.entries[key] else { return nil }
            s.tick += 1
            entry.lastUse = s.tick
            s.entries[key] = entry
            return entry.key
        }
    }

    /// Whether a key is cached (without marking it used).
    public func contains(_ key: Key) -> Bool {
        state.withLock { $0.entries[key] != nil }
    }

    /// Adds a parsed key of about `bytes` bytes uploaded at `uploadedAt` (seconds since 1970), evicting the least
    /// recently used keys beyond the budget.
    public func put(_ key: Key, _ value: EvaluationKey, bytes: Int, uploadedAt: Double = 0) {
        guard bytes <= capacity else { return }
        state.withLock { s in
            s.tick += 1
            if let old = s.entries.updateValue(Entry(key: value, bytes: bytes, lastUse: s.tick, uploadedAt: uploadedAt), forKey: key) {
                s.bytes -= old.bytes
            }
            s.bytes += bytes
            while s.bytes > capacity, let victim = s.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                s.bytes -= victim.value.bytes
                s.entries.removeValue(forKey: victim.key)
            }
        }
    }

    /// Drops every cached key of a user and config (after a re-upload).
    public func invalidate(user: String, identifier: [UInt8]) {
        state.withLock { s in
            for k in s.entries.keys where k.user == user && k.identifier == identifier {
                s.bytes -= s.entries.removeValue(forKey: k)?.bytes ?? 0
            }
        }
    }

    /// Drops every key uploaded before `cutoff` (seconds since 1970): they have expired in the store. Returns how
    /// many were dropped.
    @discardableResult
    public func dropUploaded(before cutoff: Double) -> Int {
        state.withLock { s in
            let expired = s.entries.filter { $0.value.uploadedAt < cutoff }
            for (key, entry) in expired {
                s.entries.removeValue(forKey: key)
                s.bytes -= entry.bytes
            }
            return expired.count
        }
    }

    /// Number of cached keys.
    public var count: Int { state.withLock { $0.entries.count } }
}
