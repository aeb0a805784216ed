extension CuckooTable {
    /// Where an entry sits: its global bucket and its position in that bucket.
    public struct Placement: Sendable, Equatable {
        /// Global bucket number (sub-table by sub-table).
        public var bucket: Int
        /// Position in the bucket's entry list.
        public var slot: Int

        /// A placement.
        public init(bucket: Int, slot: Int) {
            self.bucket = bucket
            self.slot = slot
        }
    }

    /// The table a previous build left, rebuilt exactly from each entry's placement, so that an update changes
    /// only the buckets its rows touch. Every placement is checked: a candidate bucket of the entry's hash, the
    /// slots of each bucket numbered `0..<count` once each, no repeated hash, every bucket within its budget.
    public init(config: CuckooTableConfig, bucketsPerTable: Int, placed entries: [HashBucket.Entry], at placements: [Placement],
                seed: UInt64 = defaultSeed) throws {
        let h = config.hashFunctionCount
        guard bucketsPerTable >= 1, bucketsPerTable <= (1 << 30) / h else {
            throw PIRError.invalidDatabase("\(bucketsPerTable) buckets per table")
        }
        guard entries.count == placements.count else { throw PIRError.invalidDatabase("\(entries.count) entries, \(placements.count) placements") }
        self.config = config
        self.bucketsPerTable = bucketsPerTable
        rng = SplitMix64(seed: seed)
        var slots = Array(repeating: [HashBucket.Entry?](), count: bucketsPerTable * h)
        var seen = Set<UInt64>(minimumCapacity: entries.count)
        for (entry, place) in zip(entries, placements) {
            guard slots.indices.contains(place.bucket), (0..<config.slotCount).contains(place.slot) else {
                throw PIRError.invalidDatabase("placement \(place.bucket)/\(place.slot) outside the table")
            }
            let candidates = CuckooHashing.candidates(keywordHash: entry.keywordHash, bucketsPerTable: bucketsPerTable, hashFunctionCount: h)
            guard candidates.enumerated().contains(where: { $0.offset * bucketsPerTable + $0.element == place.bucket }) else {
                throw PIRError.invalidDatabase("keyword hash \(entry.keywordHash) placed in bucket \(place.bucket), not one of its candidates")
            }
            guard seen.insert(entry.keywordHash).inserted else { throw PIRError.invalidDatabase("duplicate keyword hash \(entry.keywordHash)") }
            if slots[place.bucket].count <= place.slot {
                slots[place.bucket].append(contentsOf: repeatElement(nil, count: place.slot + 1 - slots[place.bucket].count))
            }
            guard slots[place.bucket][place.slot] == nil else {
                throw PIRError.invalidDatabase("two entries in bucket \(place.bucket) slot \(place.slot)")
            }
            slots[place.bucket][place.slot] = entry
        }
        buckets = []
        buckets.reserveCapacity(slots.count)
        sizes = []
        sizes.reserveCapacity(slots.count)
        for (b, list) in slots.enumerated() {
            let filled = list.compactMap { $0 }
            guard filled.count == list.count else { throw PIRError.invalidDatabase("bucket \(b) has a gap in its slots") }
            let bucket = HashBucket(entries: filled)
            guard bucket.serializedSize <= config.maxSerializedBucketSize else {
                throw PIRError.invalidDatabase("bucket \(b) holds \(bucket.serializedSize) bytes, over \(config.maxSerializedBucketSize)")
            }
            buckets.append(bucket)
            sizes.append(bucket.serializedSize)
        }
    }

    /// Each entry's placement, by keyword hash.
    public func placements() -> [UInt64: Placement] {
        var out: [UInt64: Placement] = [:]
        out.reserveCapacity(entryCount)
        for (b, bucket) in buckets.enumerated() {
            for (slot, entry) in bucket.entries.enumerated() { out[entry.keywordHash] = Placement(bucket: b, slot: slot) }
        }
        return out
    }

    /// Applies one update in place and returns the buckets whose bytes changed, or nil when the additions do not
    /// fit without growing the table (the table is then unusable and the caller lays the shard out afresh).
    ///
    /// Removals come out of their buckets (the entries after them move up); a changed value is replaced in its
    /// slot when the bucket stays within its budget, otherwise the entry is taken out and inserted again, before
    /// the additions, in the order given. The result depends only on the table and the three lists, so the same
    /// update reached from a delta file or from a new full input gives the same table.
    public mutating func update(removing removals: [UInt64], changing changes: [HashBucket.Entry],
                                adding additions: [HashBucket.Entry]) throws -> Set<Int>? {
        var position = placements()
        var changed = Set<Int>()
        func takeOut(_ hash: UInt64) throws -> Int {
            guard let place = position.removeValue(forKey: hash) else { throw PIRError.invalidDatabase("keyword hash \(hash) is not in the table") }
            let entry = buckets[place.bucket].entries.remove(at: place.slot)
            sizes[place.bucket] -= entry.serializedSize
            for (slot, later) in buckets[place.bucket].entries.enumerated().dropFirst(place.slot) {
                position[later.keywordHash] = Placement(bucket: place.bucket, slot: slot)
            }
            changed.insert(place.bucket)
            return place.bucket
        }
        for hash in removals { _ = try takeOut(hash) }
        var reinsert: [HashBucket.Entry] = []
        for entry in changes {
            guard let place = position[entry.keywordHash] else {
                throw PIRError.invalidDatabase("keyword hash \(entry.keywordHash) is not in the table")
            }
            guard entry.serializedSize + 1 <= config.maxSerializedBucketSize else {
                throw PIRError.invalidDatabase("a value of \(entry.value.count) bytes does not fit a bucket of \(config.maxSerializedBucketSize) bytes")
            }
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
        for entry in reinsert + additions {
            guard entry.serializedSize + 1 <= config.maxSerializedBucketSize, entry.value.count <= HashBucket.maxValueLength else {
                throw PIRError.invalidDatabase("a value of \(entry.value.count) bytes does not fit a bucket of \(config.maxSerializedBucketSize) bytes")
            }
            guard try insert(entry) else { return nil }
        }
        return touched
    }
}
