import BFV

/// The shards of one use case: routes a request's shard index to its server, rejecting indices out of range.
public struct ShardSet: Sendable {
    /// One server per shard index.
    public let servers: [MulPirServer]

    /// Creates the set; there must be at least one shard.
    public init(servers: [MulPirServer]) throws {
        guard !servers.isEmpty else { throw PIRError.invalidParameters("a use case needs at least one shard") }
        self.servers = servers
    }

    /// The server of shard `index`.
    public func server(forShard index: Int) throws -> MulPirServer {
        guard index >= 0, index < servers.count else {
            throw PIRError.shardIndexOutOfRange(index: index, shardCount: servers.count)
        }
        return servers[index]
    }
}
