import BFV

/// The keyword-PIR client (SPEC-PIR §2.7): shard and candidate buckets for a keyword, the index query, and the
/// value found in the decrypted buckets.
public struct KeywordPirClient: Sendable {
    /// The BFV context.
    public let context: Context
    /// Per-shard parameters (index = shard).
    public let shards: [MulPirParameters]
    /// How keywords map to shards.
    public let sharding: ShardingFunction

    /// A client for a use case's configuration.
    public init(context: Context, shards: [MulPirParameters], sharding: ShardingFunction) throws {
        guard !shards.isEmpty else { throw PIRError.invalidParameters("no shards") }
        self.context = context
        self.shards = shards
        self.sharding = sharding
    }

    /// The shard and candidate buckets (one per sub-table) of a keyword.
    public func route(keyword: [UInt8]) -> (shard: Int, candidates: [Int]) {
        let hash = KeywordHash.hash(keyword)
        let shard = sharding.shardIndex(keywordHash: hash, shardCount: shards.count)
        let p = shards[shard]
        return (shard, CuckooHashing.candidates(keywordHash: hash, bucketsPerTable: p.entryCount, hashFunctionCount: p.batchSize))
    }

    /// The query for a keyword: its shard and the query ciphertexts.
    public func generateQuery(keyword: [UInt8], secretKey: SecretKey) throws -> (shard: Int, query: [Ciphertext]) {
        let (shard, candidates) = route(keyword: keyword)
        let client = try MulPirClient(context: context, parameters: shards[shard])
        return (shard, try client.generateQuery(indices: candidates, secretKey: secretKey))
    }

    /// The value for `keyword` from the replies, or nil when no bucket holds its hash.
    public func decrypt(replies: [[Ciphertext]], keyword: [UInt8], secretKey: SecretKey) throws -> [UInt8]? {
        let (shard, candidates) = route(keyword: keyword)
        guard replies.count == candidates.count else {
            throw PIRError.invalidQuery("\(replies.count) replies for \(candidates.count) PIR calls")
        }
        let client = try MulPirClient(context: context, parameters: shards[shard])
        let hash = KeywordHash.hash(keyword)
        for (reply, index) in zip(replies, candidates) {
            let entry = try client.decrypt(reply: reply, index: index, secretKey: secretKey)
            if let value = try HashBucket(deserialize: entry).value(forKeywordHash: hash) { return value }
        }
        return nil
    }
}
