import ClusterTransport
import Foundation
import Logging
import LookupEngine
import LookupStorage
import LookupWorker
import PostgresNIO
import Synchronization

/// The desired state in the shared PostgreSQL store, with the leadership of the coordinators that share it:
/// one row (`cluster_desired_state`, JSON an operator can read with `jsonb` functions) written by the leader,
/// read by every follower. The leader is the holder of a session advisory lock (`PostgresLeaderLock`); on
/// taking the lock it claims the next *term* in `cluster_leadership`, and every write is checked against the
/// stored term in the same transaction, under a share lock on that row. A process that stalled while another
/// took over (and so still believes it leads) finds its term outdated and its write refused (`StoreError.fenced`).
/// Within a term a write never replaces a newer generation (the coordinator's writes may arrive out of order).
public final class PostgresDesiredStateStore: DesiredStateStore {
    /// Advisory-lock key of placement leadership ("CVPL").
    public static let lockKey: Int64 = 0x4356_504C
    /// The role's row in `cluster_leadership`.
    static let role = "placement"

    private let store: PostgresStore
    private let lock: PostgresLeaderLock
    /// This process's name in the table (host and port, or the cluster config's name), for operators.
    public let holder: String
    /// The term claimed since this process last took the lock; nil while it does not lead.
    private let term = Mutex<Int64?>(nil)

    /// A store in `store`; `holder` names this coordinator. Leadership is checked every `checkInterval`.
    public init(store: PostgresStore, holder: String, checkInterval: Duration = .seconds(1), logger: Logger) {
        self.store = store
        self.holder = String(holder.prefix(200))
        self.lock = PostgresLeaderLock(settings: store.settings, key: Self.lockKey, checkInterval: checkInterval, logger: logger)
        lock.start()
    }

    public func leads() async -> Bool {
        guard lock.isLeader else {
            term.withLock { $0 = nil }
            return false
        }
        if term.withLock({ $0 }) != nil { return true }
        do {
            let claimed = try await claim()
            term.withLock { $0 = claimed }
            return lock.isLeader
        } catch {
            store.logger.warning("placement term not claimed", metadata: ["error": .string("\(error)")])
            return false
        }
    }

    /// Takes the next term (the lock is held: no other process claims at the same time, and one that claimed
    /// before is fenced from now on).
    private func claim() async throws -> Int64 {
        let holder = self.holder, logger = store.logger
        return try await store.run("placement term") { client in
            let rows = try await client.query("""
                INSERT INTO cluster_leadership (role, term, holder) VALUES (\(Self.role), 1, \(holder))
                ON CONFLICT (role) DO UPDATE SET term = cluster_leadership.term + 1, holder = EXCLUDED.holder, since = now()
                RETURNING term
                """, logger: logger)
            for try await term in rows.decode(Int64.self) { return term }
            throw StoreError(.schema, "placement term: no row returned")
        }
    }

    public func load() async throws -> DesiredState? {
        let logger = store.logger
        let text = try await store.run("desired state") { client -> String? in
            let rows = try await client.query("SELECT state::text FROM cluster_desired_state WHERE id = 1", logger: logger)
            for try await text in rows.decode(String.self) { return text }
            return nil
        }
        guard let text else { return nil }
        do {
            return try JSONDecoder().decode(StoredDesiredState.self, from: Data(text.utf8)).desiredState()
        } catch {
            throw StoreError(.corrupt, "the stored desired state does not decode: \(error)")
        }
    }

    public func save(_ state: DesiredState) async throws {
        guard let mine = term.withLock({ $0 }) else { throw StoreError(.fenced, "this coordinator does not lead placement") }
        let json = String(decoding: try JSONEncoder().encode(StoredDesiredState(state)), as: UTF8.self)
        let holder = self.holder, logger = store.logger
        let generation = Int64(clamping: state.generation)
        do {
            try await store.transaction("desired state") { connection in
                // FOR SHARE: a claim of the next term waits for this write, and a write after the claim sees it.
                var current: Int64?
                for try await term in try await connection.query(
                    "SELECT term FROM cluster_leadership WHERE role = \(Self.role) FOR SHARE", logger: logger).decode(Int64.self) {
                    current = term
                }
                guard current == mine else {
                    throw StoreError(.fenced, "placement term \(mine) is outdated (now \(current.map(String.init) ?? "none"))")
                }
                try await connection.query("""
                    INSERT INTO cluster_desired_state (id, term, generation, state, written_by)
                    VALUES (1, \(mine), \(generation), \(json)::jsonb, \(holder))
                    ON CONFLICT (id) DO UPDATE SET term = EXCLUDED.term, generation = EXCLUDED.generation,
                        state = EXCLUDED.state, written_by = EXCLUDED.written_by, written_at = now()
                    WHERE cluster_desired_state.term < EXCLUDED.term OR cluster_desired_state.generation <= EXCLUDED.generation
                    """, logger: logger)
            }
        } catch let error as StoreError where error.code == .fenced {
            term.withLock { if $0 == mine { $0 = nil } }  // claim again if the lock is still ours
            throw error
        }
    }

    public func recordWorkers(_ workers: [String: Int]) async throws {
        let sorted = workers.sorted { $0.key < $1.key }
        let ids = sorted.map(\.key), shards = sorted.map { Int32(clamping: $0.value) }
        let holder = self.holder, logger = store.logger
        try await store.run("worker registry") { client in
            try await client.query("""
                INSERT INTO cluster_workers (worker_id, seen_by, shards, last_seen)
                SELECT w, \(holder), s, now() FROM unnest(\(ids)::text[], \(shards)::int[]) AS t(w, s)
                ON CONFLICT (worker_id) DO UPDATE SET seen_by = EXCLUDED.seen_by, shards = EXCLUDED.shards, last_seen = now()
                """, logger: logger)
            try await client.query("DELETE FROM cluster_workers WHERE last_seen < now() - interval '7 days'", logger: logger)
        }
    }

    public func stop() async {
        term.withLock { $0 = nil }
        await lock.stop()
    }
}

/// The desired state as stored: JSON, one entry per shard with its spec and holders (byte fields base64).
struct StoredDesiredState: Codable {
    struct Shard: Codable {
        var useCase: String
        var configID: Data
        var shard: Int
        var sha256: Data
        var totalBytes: Int
        var parameters: Data
        var keyConfigHash: Data
        var shardCount: Int
        var holders: [String]
    }

    var generation: UInt64
    var shards: [Shard]

    init(_ state: DesiredState) {
        generation = state.generation
        shards = state.shards.values.sorted { $0.key < $1.key }.map { spec in
            Shard(useCase: spec.key.useCase, configID: Data(spec.key.configID), shard: spec.key.shard, sha256: Data(spec.sha256),
                  totalBytes: spec.totalBytes, parameters: Data(spec.parameters), keyConfigHash: Data(spec.keyConfigHash),
                  shardCount: spec.shardCount, holders: (state.placement[spec.key] ?? []).sorted())
        }
    }

    /// The state, every field checked against the cluster's limits.
    func desiredState() throws -> DesiredState {
        var state = DesiredState()
        state.generation = generation
        for shard in shards {
            guard (0..<ClusterLimits.maxShardIndex).contains(shard.shard) else {
                throw StoreError(.corrupt, "a stored shard index is out of range")
            }
            let key = ShardKey(useCase: shard.useCase, configID: [UInt8](shard.configID), shard: shard.shard)
            guard ClusterLimits.validate(key.ref, needsHash: false) != nil, shard.sha256.count == 32,
                  (0...ClusterLimits.maxShardBytes).contains(UInt64(clamping: shard.totalBytes)),
                  shard.shardCount >= 1, shard.shardCount <= ClusterLimits.maxShardIndex, shard.shard < shard.shardCount,
                  shard.holders.allSatisfy(ClusterLimits.isValidWorkerID) else {
                throw StoreError(.corrupt, "stored shard \(key) is out of range")
            }
            state.shards[key] = ShardSpec(key: key, sha256: [UInt8](shard.sha256), totalBytes: shard.totalBytes,
                                          parameters: [UInt8](shard.parameters), keyConfigHash: [UInt8](shard.keyConfigHash),
                                          shardCount: shard.shardCount)
            if !shard.holders.isEmpty { state.placement[key] = Set(shard.holders) }
        }
        return state
    }
}
