import BFV

/// Options for turning keyword rows into processed shards.
public struct ProcessingOptions: Sendable {
    /// BFV parameters of every shard.
    public var encryption: EncryptionParameters
    /// Number of shards the keywords are spread over.
    public var shardCount: Int
    /// How keywords map to shards.
    public var sharding: ShardingFunction
    /// Cuckoo hash functions (= PIR calls per query).
    public var hashFunctionCount: Int
    /// Evictions per insertion before the table grows.
    public var maxEvictionCount: Int
    /// Bucket-count policy; `fixedSize` keeps the config id stable across data updates.
    public var bucketCount: CuckooTableConfig.BucketCount
    /// Bucket byte budget; nil for the reference's default from the largest value.
    public var maxSerializedBucketSize: Int?
    /// Galois-key compression advertised to devices.
    public var keyCompression: KeyCompression

    /// Options with the reference tool's defaults.
    public init(encryption: EncryptionParameters, shardCount: Int = 1, sharding: ShardingFunction = .sha256,
                hashFunctionCount: Int = 2, maxEvictionCount: Int = 100,
                bucketCount: CuckooTableConfig.BucketCount = .allowExpansion(expansionFactor: 1.1, targetLoadFactor: 0.9),
                maxSerializedBucketSize: Int? = nil, keyCompression: KeyCompression = .none) {
        self.encryption = encryption
        self.shardCount = shardCount
        self.sharding = sharding
        self.hashFunctionCount = hashFunctionCount
        self.maxEvictionCount = maxEvictionCount
        self.bucketCount = bucketCount
        self.maxSerializedBucketSize = maxSerializedBucketSize
        self.keyCompression = keyCompression
    }
}

/// One processed shard: its cuckoo table, PIR parameters and plaintext database.
public struct ProcessedShard: Sendable {
    /// The shard's index.
    public let index: Int
    /// The cuckoo table the database was built from.
    public let table: CuckooTable
    /// The shard's MulPIR parameters.
    public let parameters: MulPirParameters
    /// The evaluation-key config devices need for this shard.
    public let evaluationKeyConfig: EvaluationKeyConfig
    /// The encoded database.
    public let database: ProcessedDatabase
}

/// Shards keyword rows, builds each shard's cuckoo table, chooses its dimensions and encodes it (SPEC-PIR §2–§3).
public enum KeywordDatabaseProcessor {
    /// Splits rows into shards by keyword hash; duplicate keywords are an error (with the keyword's row number).
    public static func shard(rows: [(keyword: [UInt8], value: [UInt8])], shardCount: Int,
                             sharding: ShardingFunction) throws -> [[HashBucket.Entry]] {
        guard shardCount >= 1 else { throw PIRError.invalidParameters("shard count \(shardCount)") }
        var shards = [[HashBucket.Entry]](repeating: [], count: shardCount)
        var seen = [UInt64: Int]()
        seen.reserveCapacity(rows.count)
        for (i, row) in rows.enumerated() {
            let hash = KeywordHash.hash(row.keyword)
            if let first = seen[hash] {
                throw PIRError.invalidDatabase("row \(i + 1) repeats the keyword (or its 64-bit hash) of row \(first + 1)")
            }
            seen[hash] = i
            guard row.value.count <= HashBucket.maxValueLength else {
                let keyword = row.keyword.allSatisfy({ (0x21...0x7e).contains($0) }) ? String(decoding: row.keyword, as: UTF8.self) : "\(row.keyword.count)-byte keyword"
                throw PIRError.invalidDatabase("row \(i + 1) (keyword \(keyword)): value of \(row.value.count) bytes exceeds \(HashBucket.maxValueLength)")
            }
            shards[sharding.shardIndex(keywordHash: hash, shardCount: shardCount)]
                .append(HashBucket.Entry(keywordHash: hash, value: row.value))
        }
        return shards
    }

    /// The cuckoo table and MulPIR parameters of one shard's entries.
    public static func layout(entries: [HashBucket.Entry], options: ProcessingOptions,
                              maxValueLength: Int) throws -> (CuckooTable, MulPirParameters, EvaluationKeyConfig) {
        let p = options.encryption.bytesPerPlaintext
        let budget = options.maxSerializedBucketSize
            ?? CuckooTableConfig.defaultMaxSerializedBucketSize(maxValueLength: maxValueLength, bytesPerPlaintext: p)
        let config = try CuckooTableConfig(hashFunctionCount: options.hashFunctionCount,
                                           maxEvictionCount: options.maxEvictionCount,
                                           maxSerializedBucketSize: budget, bucketCount: options.bucketCount)
        let table = try CuckooTable(config: config, entries: entries)
        let fixed: Bool
        if case .fixedSize = options.bucketCount { fixed = true } else { fixed = false }
        let entrySize = fixed ? budget : table.maxBucketSize
        let n = table.bucketsPerTable
        let plaintexts = entrySize <= p ? (n + p / entrySize - 1) / (p / entrySize) : n
        let dims = MulPirParameters.dimensions(plaintexts: plaintexts, dimensionCount: 2,
                                               batchSize: options.hashFunctionCount, uneven: true)
        let parameters = try MulPirParameters(encryption: options.encryption, entryCount: n, entrySize: entrySize,
                                              dimensions: dims, batchSize: options.hashFunctionCount)
        return (table, parameters, parameters.evaluationKeyConfig(compression: options.keyCompression))
    }

    /// Processes one shard's entries into its cuckoo table, parameters and encoded database.
    public static func process(shard index: Int, entries: [HashBucket.Entry], options: ProcessingOptions,
                               maxValueLength: Int, context: Context) throws -> ProcessedShard {
        let (table, parameters, keyConfig) = try layout(entries: entries, options: options, maxValueLength: maxValueLength)
        let tableEntries = (0..<options.hashFunctionCount).map { j in table.table(j).map { $0.serialize() } }
        let database = try ProcessedDatabase(parameters: parameters, tableEntries: tableEntries, context: context)
        return ProcessedShard(index: index, table: table, parameters: parameters, evaluationKeyConfig: keyConfig,
                              database: database)
    }
}
