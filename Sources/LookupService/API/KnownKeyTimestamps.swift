import DequeModule
import Synchronization

/// The key timestamps this process last read from or wrote to the key store, by (user, key-config hash), at most
/// `capacity` of them (oldest first out). Used only when the store cannot be reached: a device whose key this
/// process knows keeps getting answers through an outage of a shared store; any other request gets 503.
public final class KnownKeyTimestamps: Sendable {
    private struct Entry: Hashable {
        let user: String
        let identifier: [UInt8]
    }

    private struct State {
        var timestamps: [Entry: UInt64] = [:]
        var order: Deque<Entry> = []
    }

    private let state = Mutex(State())
    /// Entries kept at most.
    public let capacity: Int

    /// An empty record holding at most `capacity` entries.
    public init(capacity: Int = 262_144) {
        self.capacity = max(capacity, 1)
    }

    /// Records what the store said: a timestamp, or nil for no key (which forgets the entry).
    public func record(user: String, identifier: [UInt8], timestamp: UInt64?) {
        let entry = Entry(user: user, identifier: identifier)
        state.withLock { state in
            guard let timestamp else {
                state.timestamps[entry] = nil  // its place in `order` is skipped when it comes up
                return
            }
            if state.timestamps.updateValue(timestamp, forKey: entry) == nil { state.order.append(entry) }
            // `order` may hold places of forgotten entries (and a re-added entry twice, so it may leave early):
            // both loops keep memory bounded.
            while state.timestamps.count > capacity, let oldest = state.order.popFirst() { state.timestamps[oldest] = nil }
            while state.order.count > 2 * capacity, let oldest = state.order.popFirst() { state.timestamps[oldest] = nil }
        }
    }

    /// The last timestamp recorded for (user, identifier).
    public func timestamp(user: String, identifier: [UInt8]) -> UInt64? {
        state.withLock { $0.timestamps[Entry(user: user, identifier: identifier)] }
    }
}
