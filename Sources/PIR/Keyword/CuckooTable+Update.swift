extension CuckooTable {
    /// Where an entry sits: its global bucket and its position in that bucket.
    public struct EntryPosition: Sendable, Equatable {
        /// Global bucket number (sub-table by sub-table).
        public var bucket: Int
        /// Position in the bucket's entry list.
        public var slot: Int

        /// A position.
        public init(bucket: Int, slot: Int) {
            self.bucket = bucket
            self.slot = slot
        }
    }

    /// The table a previous build left, from its buckets, so that an update changes only the buckets its rows
    /// touch. The buckets come from a shard file checked against its manifest digest, so entries are taken to be
    /// where that build put them (checking every entry's candidates would hash every row again); each bucket's
    /// entry count and size are checked.
    public init(config: CuckooTableConfig, bucketsPerTable: Int, buckets: [HashBucket], seed: UInt64 = defaultSeed) throws {
        let h = config.hashFunctionCount
        guard bucketsPerTable >= 1, bucketsPerTable <= (1 << 30) / h, buckets.count == bucketsPerTable * h else {
            throw PIRError.invalidDatabase("\(buckets.count) buckets for \(h) tables of \(bucketsPerTable)")
        }
        self.config = config
        self.bucketsPerTable = bucketsPerTable
        rng = SplitMix64(seed: seed)
        sizes = []
        sizes.reserveCapacity(buckets.count)
        for (b, bucket) in buckets.enumerated() {
            guard bucket.entries.count <= config.slotCount, bucket.serializedSize <= config.maxSerializedBucketSize else {
                throw PIRError.invalidDatabase("bucket \(b) holds \(bucket.serializedSize) bytes in \(bucket.entries.count) entries, over its budget")
            }
            sizes.append(bucket.serializedSize)
        }
        self.buckets = buckets
    }

    /// Where an entry with this keyword hash sits, looked up in its candidate buckets; nil when absent.
    public func position(ofKeywordHash hash: UInt64) -> EntryPosition? {
        for b in candidateBuckets(keywordHash: hash) {
            if let slot = buckets[b].entries.firstIndex(where: { $0.keywordHash == hash }) { return EntryPosition(bucket: b, slot: slot) }
        }
        return nil
    }

    /// Applies one update in place and returns the buckets whose bytes changed, or nil when the additions do not
    /// fit without growing the table (the table is then unusable and the caller lays the shard out afresh).
    ///
    /// Removals come out of their buckets (the entries after them move up); a changed value is replaced in its
    /// slot when the bucket stays within its budget, otherwise the entry is taken out and inserted again with the
    /// additions, all in ascending keyword-hash order. The result depends only on the table and the sets of
    /// changes, not on their order, so the same update reached from a delta file or from a new full input gives
    /// the same table.
    public mutating func update(removing removals: [UInt64], changing changes: [HashBucket.Entry],
                                adding additions: [HashBucket.Entry]) throws -> Set<Int>? {
        var changed = Set<Int>()
        func takeOut(_ hash: UInt64) throws -> Int {
            guard let place = position(ofKeywordHash: hash) else { throw PIRError.invalidDatabase("keyword hash \(hash) is not in the table") }
            let entry = buckets[place.bucket].entries.remove(at: place.slot)
            sizes[place.bucket] -= entry.serializedSize
            changed.insert(place.bucket)
            return place.bucket
        }
        for hash in removals { _ = try takeOut(hash) }
        var reinsert: [HashBucket.Entry] = []
        for entry in changes {
            guard let place = position(ofKeywordHash: entry.keywordHash) else {
                throw PIRError.invalidDatabase("keyword hash \(entry.keywordHash) is not in the table")
            }
            try Self.checkFits(entry, config: config)
            let old = buckets[place.bucket].entries[place.slot]
            if sizes[place.bucket] - old.serializedSize + entry.serializedSize <= config.maxSerializedBucketSize {
                buckets[place.bucket].entries[place.slot] = entry
                sizes[place.bucket] += entry.serializedSize - old.serializedSize
                changed.insert(place.bucket)
            } else {
                _ = try takeOut(entry.keywordHash)
                reinsert.append(entry)
            }
        }
        touched = changed
        defer { touched = nil }
        for entry in (reinsert + additions).sorted(by: { $0.keywordHash < $1.keywordHash }) {
            try Self.checkFits(entry, config: config)
            guard try insert(entry) else { return nil }
        }
        return touched
    }
}
