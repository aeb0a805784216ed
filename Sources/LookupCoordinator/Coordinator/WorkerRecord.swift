import ClusterTransport

/// The coordinator's view of one admitted worker: where to reach it, and the actual state its last heartbeat
/// reported, plus what was last sent to it (for back-off).
struct WorkerRecord {
    /// A shard with a given content: what an assign or a drop is about.
    struct Content: Hashable {
        let key: ShardKey
        let sha256: [UInt8]
    }

    /// When a message about some content was last sent, how often, and the transfer offset seen then.
    struct Sent {
        var at: ContinuousClock.Instant
        var attempts: Int
        var progress: UInt64
    }

    /// The ZeroMQ routing id of its current connection.
    var route: [UInt8]
    /// The socket descriptor of its current connection (nil over inproc), which a disconnect event names.
    var connection: Int32?
    /// Its connection closed since its last hello: it is routed no queries until it says hello again.
    var disconnected = false
    /// Random per worker process start.
    var incarnation: UInt64
    var lastSeen: ContinuousClock.Instant
    var inFlight = 0
    var credit: Int
    /// Shards loaded and verified, with their content hash.
    var actual: [ShardKey: [UInt8]] = [:]
    /// Transfers under way: content hash and verified offset.
    var transfers: [ShardKey: (sha256: [UInt8], offset: UInt64)] = [:]
    /// Assigns and drops sent and not yet reflected in the actual state.
    var assignsSent: [Content: Sent] = [:]
    var dropsSent: [Content: Sent] = [:]
}
