import ClusterTransport
import LookupEngine
import Foundation

extension ClusterCoordinator {
    /// Live workers and the shards each reported loaded (any content).
    public var workers: [String: Set<ShardKey>] {
        state.withLock { $0.workers.mapValues { Set($0.actual.keys) } }
    }

    /// Queries each live worker holds credit for: sent and not yet answered, including those whose client went
    /// away (their credit returns when the worker answers).
    public var queriesInFlight: [String: Int] { state.withLock { $0.workers.mapValues(\.inFlight) } }

    /// Queries waiting in line for a replica's credit.
    public var queriesWaiting: Int { state.withLock { $0.line.count } }

    /// The desired state as it stands.
    public var desiredState: DesiredState { state.withLock { $0.desired } }

    /// Each live worker's loaded shards with their content hashes.
    public var actualState: [String: [ShardKey: [UInt8]]] { state.withLock { $0.workers.mapValues(\.actual) } }

    /// Whether the actual state equals the desired one: every placed shard loaded with the desired content on each
    /// of its holders, and no worker holding or fetching anything else.
    public var isConverged: Bool {
        state.withLock { s in
            if s.planDirty && s.leading { return false }
            for (name, record) in s.workers {
                let wanted = Dictionary(uniqueKeysWithValues: s.desired.shards(on: name).map { ($0.key, $0.sha256) })
                if record.actual != wanted || !record.transfers.isEmpty { return false }
            }
            guard !s.workers.isEmpty else { return s.desired.shards.isEmpty }
            return s.desired.shards.keys.allSatisfy { key in
                let holders = s.desired.placement[key] ?? []
                return !holders.isEmpty && holders.allSatisfy { s.workers[$0] != nil }
            }
        }
    }

    /// Waits until the cluster has converged (or the timeout passes); returns whether it did.
    public func waitUntilConverged(timeout: Duration = .seconds(60)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if isConverged { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits until every desired shard is loaded, with its desired content, on `copies` workers (or the timeout
    /// passes); returns whether it happened.
    public func waitUntilPlaced(copies: Int, timeout: Duration = .seconds(60)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let placed = state.withLock { s in
                s.desired.shards.allSatisfy { key, spec in Self.holders(of: key, spec, in: s) >= copies }
            }
            if placed { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits until `workerCount` workers are connected and the cluster has converged; returns whether that
    /// happened before the timeout.
    public func waitUntilBalanced(workerCount: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if workers.count == workerCount, isConverged { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// `{"workers":{"<id>":<shards loaded>,…},"incarnations":{"<id>":"<hex>",…},"converged":…,"desiredShards":…,
    /// "desiredGeneration":…,"placementLeader":…}` for `/healthz`; an incarnation changes when the worker process
    /// restarts.
    public var healthJSON: String? {
        let records = state.withLock { $0.workers.mapValues { ($0.actual.count, $0.incarnation) } }.sorted { $0.key < $1.key }
        let current = records.map { "\"\($0.key)\":\($0.value.0)" }
        let incarnations = records.map { "\"\($0.key)\":\"\(String($0.value.1, radix: 16))\"" }
        let desired = desiredState
        return "{\"workers\":{\(current.joined(separator: ","))},\"incarnations\":{\(incarnations.joined(separator: ","))},"
            + "\"converged\":\(isConverged),\"desiredShards\":\(desired.shards.count),\"desiredGeneration\":\(desired.generation),"
            + "\"placementLeader\":\(leadsPlacement)}"
    }
}

extension ClusterCoordinator {
    /// Desired shards that no connected worker holds with the desired content: queries for them fail.
    public var unservedShards: Int { placementCounts.unserved }

    /// Desired shards, those no live worker serves, and those served by fewer workers than the replication target
    /// (the configured replication, at most the workers on the allow-list, or connected where there is none).
    var placementCounts: (desired: Int, unserved: Int, underReplicated: Int, target: Int) {
        let listed = zap?.allowedUserIDs.count ?? 0
        return state.withLock { s in
            let target = min(options.replication, max(listed, s.workers.count))
            var unserved = 0, under = 0
            for (key, spec) in s.desired.shards {
                let holders = Self.holders(of: key, spec, in: s)
                if holders == 0 { unserved += 1 }
                if holders < max(target, 1) { under += 1 }
            }
            return (s.desired.shards.count, unserved, under, target)
        }
    }

    /// Live workers that report `key` loaded with the desired content.
    static func holders(of key: ShardKey, _ spec: ShardSpec, in s: State) -> Int {
        s.workers.values.filter { $0.actual[key] == spec.sha256 }.count
    }

    /// Sets the cluster's gauges at a scrape.
    func collect(into metrics: ServiceMetrics) {
        let counts = placementCounts
        metrics.set("callveil_cluster_shards_desired", counts.desired)
        metrics.set("callveil_cluster_shards_unserved", counts.unserved)
        metrics.set("callveil_cluster_shards_under_replicated", counts.underReplicated)
        metrics.set("callveil_cluster_replication_target", counts.target)
        metrics.set("callveil_cluster_workers", workers.count)
        metrics.set("callveil_cluster_placement_leader", leadsPlacement ? 1 : 0)
    }
}
