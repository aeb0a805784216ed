import DequeModule
import Foundation
import ServiceCore
import Synchronization

/// Remembers the encapsulated keys of requests the gateway opened, for `window`, so a relay or an observer that
/// sends a captured request again is refused (RFC 9458 §6.5). Each request's HPKE encapsulated key is fresh, so
/// a repeated one is a replay. Bounded: beyond `capacity` the oldest entries are forgotten early (and counted).
public final class GatewayReplayCache: Sendable {
    struct State {
        var seen: [Data: Double] = [:]
        var order: Deque<(key: Data, at: Double)> = []
        var forgottenEarly = 0
    }

    /// Seconds an entry is kept.
    public let window: TimeInterval
    /// Entries kept at most.
    public let capacity: Int
    private let clock: @Sendable () -> Date
    private let state = Mutex(State())

    /// A cache keeping entries for `window` seconds, at most `capacity` of them.
    public init(window: TimeInterval = 600, capacity: Int = 1_000_000, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.window = window
        self.capacity = max(capacity, 1)
        self.clock = clock
    }

    /// Records `enc`; false when it was seen within the window (a replay).
    public func admit(_ enc: [UInt8]) -> Bool {
        let now = clock().timeIntervalSince1970
        let key = Data(enc)
        return state.withLock { state in
            while let first = state.order.first, first.at <= now - window || state.order.count >= capacity {
                if first.at > now - window { state.forgottenEarly += 1 }
                state.order.removeFirst()
                if state.seen[first.key] == first.at { state.seen[first.key] = nil }
            }
            if let at = state.seen[key], at > now - window { return false }
            state.seen[key] = now
            state.order.append((key, now))
            return true
        }
    }

    /// Entries held, and entries forgotten before their window ended because the cache was full.
    public var usage: (entries: Int, forgottenEarly: Int) { state.withLock { ($0.order.count, $0.forgottenEarly) } }
}
