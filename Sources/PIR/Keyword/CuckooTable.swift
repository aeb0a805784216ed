/// A shard's cuckoo hash table: `hashFunctionCount` sub-tables of `bucketsPerTable` buckets, each keyword in one
/// of its candidate buckets (SPEC-PIR §2.4).
///
/// Insertion follows the reference (first candidate with room, else a random eviction among the slots whose
/// removal makes room), with one difference: when the table has to grow, the pair being inserted is re-inserted
/// after the rebuild. The reference's tool drops it in that case; here no row is ever lost, and a table that
/// cannot hold the data (fixed size) is an error.
public struct CuckooTable: Sendable {
    /// The config used.
    public let config: CuckooTableConfig
    /// Buckets per sub-table (`num_entries`).
    public internal(set) var bucketsPerTable: Int
    /// All buckets, sub-table by sub-table.
    public internal(set) var buckets: [HashBucket]
    /// Serialized size of each bucket, kept in step with `buckets`.
    var sizes: [Int]
    /// How often the table grew.
    public private(set) var expansions = 0
    var rng: SplitMix64
    /// Buckets whose contents an insertion changed, when the caller tracks them (see `update`).
    var touched: Set<Int>?

    /// The seed of the eviction choices when none is given.
    public static let defaultSeed: UInt64 = 0x43_61_6C_6C_56_65_69_6C

    /// Builds a table for `(keywordHash, value)` pairs; `seed` makes evictions reproducible.
    public init(config: CuckooTableConfig, entries: [HashBucket.Entry], seed: UInt64 = defaultSeed) throws {
        self.config = config
        let h = config.hashFunctionCount
        for e in entries { try Self.checkFits(e, config: config) }
        let total: Int
        switch config.bucketCount {
        case let .allowExpansion(_, load):
            let minBytes = entries.reduce(1) { $0 + $1.serializedSize }
            let minBuckets = (minBytes + config.maxSerializedBucketSize - 1) / config.maxSerializedBucketSize
            total = Self.roundUp(Int((Double(minBuckets) / load).rounded(.up)), to: h)
        case .fixedSize(let count):
            total = Self.roundUp(count, to: h)
        }
        bucketsPerTable = max(total / h, 1)
        buckets = []
        sizes = []
        rng = SplitMix64(seed: seed)
        try rebuild(with: entries)
    }

    static func roundUp(_ x: Int, to m: Int) -> Int { ((max(x, 1) + m - 1) / m) * m }

    /// Throws unless `entry` fits an empty bucket of `config` (and its value a u16 length).
    static func checkFits(_ entry: HashBucket.Entry, config: CuckooTableConfig) throws {
        guard entry.serializedSize + 1 <= config.maxSerializedBucketSize, entry.value.count <= HashBucket.maxValueLength else {
            throw PIRError.invalidDatabase("a value of \(entry.value.count) bytes does not fit a bucket of \(config.maxSerializedBucketSize) bytes")
        }
    }

    /// Global bucket numbers of the candidates of a keyword hash (one per sub-table).
    public func candidateBuckets(keywordHash: UInt64) -> [Int] {
        CuckooHashing.candidates(keywordHash: keywordHash, bucketsPerTable: bucketsPerTable,
                                 hashFunctionCount: config.hashFunctionCount)
            .enumerated().map { $0.offset * bucketsPerTable + $0.element }
    }

    /// Every entry in the table.
    public var entryCount: Int { buckets.reduce(0) { $0 + $1.entries.count } }

    /// The largest serialized bucket.
    public var maxBucketSize: Int { sizes.max() ?? 1 }

    /// Buckets of sub-table `j`.
    public func table(_ j: Int) -> ArraySlice<HashBucket> {
        buckets[(j * bucketsPerTable)..<((j + 1) * bucketsPerTable)]
    }

    /// Empties the table at the current size and inserts `entries`, growing until all fit.
    private mutating func rebuild(with entries: [HashBucket.Entry]) throws {
        outer: while true {
            buckets = Array(repeating: HashBucket(), count: bucketsPerTable * config.hashFunctionCount)
            sizes = Array(repeating: 1, count: buckets.count)
            for e in entries {
                if try !insert(e) {
                    try grow()
                    continue outer
                }
            }
            return
        }
    }

    private mutating func grow() throws {
        guard case let .allowExpansion(factor, _) = config.bucketCount else {
            throw PIRError.invalidDatabase("the fixed-size cuckoo table (\(buckets.count) buckets) cannot hold the data: increase bucketCount")
        }
        let h = config.hashFunctionCount
        let total = Self.roundUp(Int((Double(bucketsPerTable * h) * factor).rounded(.up)), to: h)
        bucketsPerTable = max(total / h, bucketsPerTable + 1)
        expansions += 1
    }

    /// Inserts one pair with evictions; false when the table must grow (the table then holds every pair it
    /// held before plus possibly the new one, and the caller rebuilds from the full list).
    mutating func insert(_ entry: HashBucket.Entry) throws -> Bool {
        var pending = entry
        var evictionsLeft = config.maxEvictionCount
        let budget = config.maxSerializedBucketSize
        while true {
            let candidates = candidateBuckets(keywordHash: pending.keywordHash)
            for c in candidates where buckets[c].entries.contains(where: { $0.keywordHash == pending.keywordHash }) {
                throw PIRError.invalidDatabase("duplicate keyword hash \(pending.keywordHash)")
            }
            if let free = candidates.first(where: {
                buckets[$0].entries.count < config.slotCount && sizes[$0] + pending.serializedSize <= budget
            }) {
                buckets[free].entries.append(pending)
                sizes[free] += pending.serializedSize
                touched?.insert(free)
                return true
            }
            var choices: [(bucket: Int, slot: Int)] = []
            for c in Set(candidates).sorted() {
                for (slot, e) in buckets[c].entries.enumerated()
                where sizes[c] - e.serializedSize + pending.serializedSize <= budget {
                    choices.append((c, slot))
                }
            }
            guard !choices.isEmpty, evictionsLeft > 0 else { return false }
            let pick = choices[Int(rng.next() % UInt64(choices.count))]
            let evicted = buckets[pick.bucket].entries[pick.slot]
            buckets[pick.bucket].entries[pick.slot] = pending
            sizes[pick.bucket] += pending.serializedSize - evicted.serializedSize
            touched?.insert(pick.bucket)
            pending = evicted
            evictionsLeft -= 1
        }
    }
}

