import Foundation
import LookupEngine
import NIOCore
import PostgresNIO
import Synchronization

/// The Oblivious HTTP gateways' shared replay record: where gateway keys are shared (PostgreSQL), a request opened
/// by one gateway must be refused as a replay by every other, so the encapsulated key of every opened request is
/// recorded here for the replay window. An admission is one statement: insert the key, or take over its row when
/// that row's window has passed; a row returned means admitted, none means a replay (of concurrent admissions of
/// one key on any gateway exactly one wins). Expired rows are deleted at most once a minute.
public final class PostgresReplayStore: Sendable {
    private let store: PostgresStore
    /// Seconds a request is remembered.
    public let window: Double
    private let clock: @Sendable () -> Date
    private let lastPrune = Mutex<Double>(0)

    /// A replay record over `store` keeping requests for `window` seconds.
    public init(store: PostgresStore, window: TimeInterval, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.window = window
        self.clock = clock
    }

    /// Records `enc`; false when any gateway recorded it within the window (a replay).
    public func admit(_ enc: [UInt8]) async throws -> Bool {
        let now = clock().timeIntervalSince1970
        let expired = now - window
        let logger = store.logger
        let key = Data(enc)
        let admitted = try await store.run("replay record") { client in
            let rows = try await client.query("""
                INSERT INTO ohttp_replays (enc, seen_at) VALUES (\(key), \(now))
                ON CONFLICT (enc) DO UPDATE SET seen_at = EXCLUDED.seen_at WHERE ohttp_replays.seen_at <= \(expired)
                RETURNING 1
                """, logger: logger)
            var admitted = false
            for try await _ in rows { admitted = true }
            return admitted
        }
        if lastPrune.withLock({ last in now - last >= 60 ? { last = now; return true }() : false }) {
            let store = self.store
            Task { try? await store.run("replay record pruning") { client in
                try await client.query("DELETE FROM ohttp_replays WHERE seen_at <= \(expired)", logger: logger)
            } }
        }
        return admitted
    }
}
