/// How full a version's cuckoo tables are: the bytes its rows take in buckets (10 per row, plus the value) over the
/// bytes of every bucket of every shard. A table far emptier than it needs (a `--fixed-bucket-count` much larger than
/// the rows) costs every query its whole size in compute and the output its size on disk.
public struct TableFill: Sendable, Equatable {
    /// Bytes the rows take.
    public let used: Int
    /// Bytes of the tables (buckets × bucket bytes over the shards).
    public let capacity: Int
    /// Buckets over the shards.
    public let buckets: Int
    /// Bytes of one bucket.
    public let bucketBytes: Int

    /// `used / capacity`.
    public var fraction: Double { capacity == 0 ? 0 : Double(used) / Double(capacity) }

    /// Buckets per shard that would hold the rows half full, the fill a fresh layout aims near.
    public func bucketsForHalfFull(shards: Int) -> Int {
        max((2 * used + bucketBytes * shards - 1) / max(bucketBytes * shards, 1), 1)
    }

    /// The fill of the version at `manifestPath`, whose rows' values take `valueBytes`.
    public static func of(manifestPath: String, valueBytes: Int) throws -> TableFill {
        let version = try DatasetBuilder.Previous(manifestPath: manifestPath)
        var capacity = 0, buckets = 0, bucketBytes = 0
        for shard in version.manifest.shards {
            // A keyword shard's PIR database holds each sub-table's buckets as `numEntries` entries, one sub-table per
            // hash function (the query's batch).
            let parameters = try version.parameters(of: shard)
            let shardBuckets = Int(parameters.numEntries) * max(Int(parameters.batchSize), 1)
            buckets += shardBuckets
            bucketBytes = Int(parameters.entrySize)
            capacity += shardBuckets * Int(parameters.entrySize)
        }
        return TableFill(used: version.manifest.rows * 10 + valueBytes, capacity: capacity, buckets: buckets, bucketBytes: bucketBytes)
    }
}
