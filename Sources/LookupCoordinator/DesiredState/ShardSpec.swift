import ClusterTransport

/// One shard's content as the cluster wants it served: its key, the SHA-256 of its shard file (so new data
/// under the same config id is a different spec), and what a worker needs to load and serve it.
public struct ShardSpec: Sendable, Equatable {
    /// Use case, config id and shard index.
    public let key: ShardKey
    /// SHA-256 of the shard file.
    public let sha256: [UInt8]
    /// Size of the shard file.
    public let totalBytes: Int
    /// Serialized `pir.v1.PirParameters` of the shard.
    public let parameters: [UInt8]
    /// The use case's evaluation-key-config hash.
    public let keyConfigHash: [UInt8]
    /// Shards in the version.
    public let shardCount: Int

    /// A spec.
    public init(key: ShardKey, sha256: [UInt8], totalBytes: Int, parameters: [UInt8], keyConfigHash: [UInt8], shardCount: Int) {
        self.key = key
        self.sha256 = sha256
        self.totalBytes = totalBytes
        self.parameters = parameters
        self.keyConfigHash = keyConfigHash
        self.shardCount = shardCount
    }
}
