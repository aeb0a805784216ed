/// How a shard's cuckoo table is sized and filled (SPEC-PIR §2.4).
public struct CuckooTableConfig: Sendable, Hashable {
    /// How the number of buckets is chosen.
    public enum BucketCount: Sendable, Hashable {
        /// Start from the data size over `targetLoadFactor` and grow by `expansionFactor` when an insertion fails.
        case allowExpansion(expansionFactor: Double, targetLoadFactor: Double)
        /// Exactly this many buckets over all sub-tables (rounded up to a multiple of the hash-function count);
        /// keeps `num_entries` and `entry_size` (and so the config id) stable across data updates.
        case fixedSize(bucketCount: Int)
    }

    /// Hash functions = sub-tables = PIR calls per query.
    public var hashFunctionCount: Int
    /// Evictions allowed for one insertion before the table grows.
    public var maxEvictionCount: Int
    /// Byte budget of one serialized bucket (`B`).
    public var maxSerializedBucketSize: Int
    /// Bucket-count policy.
    public var bucketCount: BucketCount
    /// Most entries per bucket (at most 255).
    public var slotCount: Int

    /// Creates and validates a config.
    public init(hashFunctionCount: Int = 2, maxEvictionCount: Int = 100, maxSerializedBucketSize: Int,
                bucketCount: BucketCount = .allowExpansion(expansionFactor: 1.1, targetLoadFactor: 0.9),
                slotCount: Int = HashBucket.maxEntries) throws {
        guard hashFunctionCount >= 1, hashFunctionCount <= 16 else { throw PIRError.invalidParameters("hash function count") }
        guard maxSerializedBucketSize >= 11 else { throw PIRError.invalidParameters("bucket size below 11 bytes") }
        guard slotCount >= 1, slotCount <= HashBucket.maxEntries else { throw PIRError.invalidParameters("slot count") }
        guard maxEvictionCount >= 0 else { throw PIRError.invalidParameters("eviction count") }
        switch bucketCount {
        case let .allowExpansion(expansion, load):
            guard expansion > 1, load > 0, load < 1 else { throw PIRError.invalidParameters("expansion \(expansion), load \(load)") }
        case .fixedSize(let count):
            guard count >= 1 else { throw PIRError.invalidParameters("fixed bucket count \(count)") }
        }
        self.hashFunctionCount = hashFunctionCount
        self.maxEvictionCount = maxEvictionCount
        self.maxSerializedBucketSize = maxSerializedBucketSize
        self.bucketCount = bucketCount
        self.slotCount = slotCount
    }

    /// The reference's default budget: a bucket holding only the largest value, rounded up to whole plaintexts
    /// when that is at least half a plaintext, else half a plaintext.
    public static func defaultMaxSerializedBucketSize(maxValueLength: Int, bytesPerPlaintext p: Int) -> Int {
        let single = 11 + maxValueLength
        return single >= p / 2 ? ((single + p - 1) / p) * p : p / 2
    }
}
