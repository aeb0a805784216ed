import ClusterTransport

/// What the cluster should look like: every shard to serve (with its content hash) and the workers that must
/// hold it. The coordinator compares it with the actual state each worker reports in its heartbeat and sends
/// whatever is missing; nothing else drives placement.
public struct DesiredState: Sendable, Equatable {
    /// Shards to serve, by key.
    public var shards: [ShardKey: ShardSpec] = [:]
    /// Workers that must hold each shard (with the content in `shards`).
    public var placement: [ShardKey: Set<String>] = [:]
    /// Bumped on every change, so a store can tell newer from older.
    public var generation: UInt64 = 0

    /// An empty desired state.
    public init() {}

    /// The shards `worker` must hold.
    public func shards(on worker: String) -> [ShardSpec] {
        placement.compactMap { key, holders in holders.contains(worker) ? shards[key] : nil }
    }
}
