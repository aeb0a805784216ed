import LookupProtocol

/// Identifies one shard of one use-case version across the cluster.
public struct ShardKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Use-case name.
    public let useCase: String
    /// Config id of the version.
    public let configID: [UInt8]
    /// Shard index.
    public let shard: Int

    /// A key.
    public init(useCase: String, configID: [UInt8], shard: Int) {
        self.useCase = useCase
        self.configID = configID
        self.shard = shard
    }

    /// The key of a wire reference.
    public init(_ ref: ClusterShardRef) {
        self.init(useCase: ref.usecase, configID: [UInt8](ref.configID), shard: Int(ref.shard))
    }

    /// The wire reference.
    public var ref: ClusterShardRef {
        .with {
            $0.usecase = useCase
            $0.configID = .init(configID)
            $0.shard = UInt32(shard)
        }
    }

    /// Short hex of the config id.
    public var configHex: String { configID.prefix(8).hexString }

    public var description: String { "\(useCase)/\(configHex)/\(shard)" }

    public static func < (a: ShardKey, b: ShardKey) -> Bool {
        (a.useCase, a.configHex, a.shard) < (b.useCase, b.configHex, b.shard)
    }
}
