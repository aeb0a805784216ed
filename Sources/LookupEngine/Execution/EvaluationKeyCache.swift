import BFV
import Synchronization

/// Parsed evaluation keys kept ready for queries, least recently used dropped first, bounded in bytes.
/// Parsing a key costs milliseconds; a device sends several queries with the same key. Every operation but the
/// expiry sweep takes constant time whatever the number of keys cached: at population scale nearly every query
/// puts a key and evicts one, under the lock every lookup's `get` takes.
public final class EvaluationKeyCache: Sendable {
    /// Cache key: the key's owner, config hash and device timestamp (a re-upload is a different entry).
    public struct Key: Hashable, Sendable {
        public let user: String
        public let identifier: [UInt8]
        public let timestamp: UInt64

        var owner: Owner { Owner(user: user, identifier: identifier) }
    }

    /// A user's key config: the entries `invalidate(user:identifier:)` drops.
    struct Owner: Hashable {
        let user: String
        let identifier: [UInt8]
    }

    private let state = Mutex(EvaluationKeyCacheState())
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
            guard let slot = s.slots[key] else { return nil }
            s.moveToFront(slot)
            return s.node(slot).value
        }
    }

    /// Whether a key is cached (without marking it used).
    public func contains(_ key: Key) -> Bool {
        state.withLock { $0.slots[key] != nil }
    }

    /// Adds a parsed key of about `bytes` bytes uploaded at `uploadedAt` (seconds since 1970), evicting the least
    /// recently used keys beyond the budget.
    public func put(_ key: Key, _ value: EvaluationKey, bytes: Int, uploadedAt: Double = 0) {
        guard bytes <= capacity else { return }
        // A replaced or evicted key is released after the lock: freeing a megabyte of words is not done holding it.
        let dropped: [EvaluationKey] = state.withLock { s in
            var dropped: [EvaluationKey] = []
            if let slot = s.slots[key] { dropped.append(s.remove(slot)) }
            s.insertAtFront(key, value, bytes: bytes, uploadedAt: uploadedAt)
            while s.bytes > capacity, s.tail != s.head {  // the key just put is the head: never evicted
                dropped.append(s.remove(s.tail))
            }
            return dropped
        }
        _ = dropped
    }

    /// Drops every cached key of a user and config (after a re-upload).
    public func invalidate(user: String, identifier: [UInt8]) {
        let dropped: [EvaluationKey] = state.withLock { s in
            guard let timestamps = s.owners[Owner(user: user, identifier: identifier)] else { return [] }
            return timestamps.compactMap { timestamp in
                s.slots[Key(user: user, identifier: identifier, timestamp: timestamp)].map { s.remove($0) }
            }
        }
        _ = dropped
    }

    /// Drops every key uploaded before `cutoff` (seconds since 1970): they have expired in the store. Returns how
    /// many were dropped. Visits every cached key (the periodic expiry sweep, not a query's path).
    @discardableResult
    public func dropUploaded(before cutoff: Double) -> Int {
        let dropped: [EvaluationKey] = state.withLock { s in
            let expired = s.slots.values.filter { s.node($0).uploadedAt < cutoff }
            return expired.map { s.remove($0) }
        }
        return dropped.count
    }

    /// Number of cached keys.
    public var count: Int { state.withLock { $0.slots.count } }

    /// Bytes charged for the cached keys.
    public var bytes: Int { state.withLock { $0.bytes } }

    /// The cached keys, most recently used first (for tests and diagnostics).
    public var keysByRecency: [Key] {
        state.withLock { s in
            var keys: [Key] = []
            var slot = s.head
            while slot != EvaluationKeyCacheState.none {
                keys.append(s.node(slot).key)
                slot = s.node(slot).next
            }
            return keys
        }
    }
}
