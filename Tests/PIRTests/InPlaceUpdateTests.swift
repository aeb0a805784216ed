import BFV
import ConformanceSupport
import PIR
import Testing

/// In-place cuckoo updates: the table restored from a shard file is the table, an update keeps every entry in one
/// of its candidates, reports every bucket whose bytes changed, and the plaintexts it re-encodes patched over the
/// previous shard file give exactly the file of the whole updated table encoded from nothing.
@Suite("In-place shard updates")
struct InPlaceUpdateTests {
    static func entry(_ rng: inout TestRandom, maxValue: Int) -> HashBucket.Entry {
        HashBucket.Entry(keywordHash: rng.next(), value: (0..<Int.random(in: 1...maxValue, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }

    @Test("random updates: restored tables are equal, changed buckets are reported, patched shards equal full encodings",
          arguments: [(40, 1024, 64), (300, 4096, 128)])
    func randomUpdates(maxValue: Int, bucketBytes: Int, buckets: Int) throws {
        var rng = TestRandom()
        let encryption = EncryptionParameters(.n_4096_logq_27_28_28_logt_5)
        let context = try Context(parameters: encryption)
        let options = ProcessingOptions(encryption: encryption, bucketCount: .fixedSize(bucketCount: buckets),
                                        maxSerializedBucketSize: bucketBytes)
        var entries = (0..<800).map { _ in Self.entry(&rng, maxValue: maxValue) }
        let layout = try KeywordDatabaseProcessor.layout(entries: entries, options: options, maxValueLength: maxValue)
        var table = layout.0
        let parameters = layout.1
        let blob: [UInt8] = [7, 7, 7]
        func encoded(_ table: CuckooTable) throws -> [UInt8] {
            try ShardFile.serialize(payloads: try KeywordDatabaseProcessor.payloads(of: table, parameters: parameters),
                                    parameters: parameters, parameterBlob: blob)
        }
        var file = try encoded(table)
        for round in 0..<4 {
            // Restore from the shard file: the same buckets, entry for entry.
            let restored = try KeywordDatabaseProcessor.restore(payloads: try ShardFile.payloads(file, context: context),
                                                                parameters: parameters, config: table.config)
            #expect(restored.buckets == table.buckets)

            let removed = Array(entries.prefix(20)).map(\.keywordHash)
            let changed = entries[20..<60].map { HashBucket.Entry(keywordHash: $0.keywordHash, value: Self.entry(&rng, maxValue: maxValue).value) }
            let added = (0..<40).map { _ in Self.entry(&rng, maxValue: maxValue) }
            let before = restored.buckets
            var updated = restored
            guard let touched = try updated.update(removing: removed, changing: changed, adding: added) else {
                Issue.record("round \(round): the fixed table should hold the update")
                return
            }
            let differing = Set(before.indices.filter { before[$0] != updated.buckets[$0] })
            #expect(differing.isSubset(of: touched), "round \(round): a changed bucket was not reported")
            // Reported buckets are the changed ones: only an eviction chain passing a bucket twice can leave it as it was.
            #expect(touched.subtracting(differing).count <= 2, "round \(round): \(touched.count) reported, \(differing.count) changed")
            entries = Array(entries[60...]) + changed + added
            #expect(updated.entryCount == entries.count)
            for e in entries {
                #expect(updated.candidateBuckets(keywordHash: e.keywordHash).contains { updated.buckets[$0].entries.contains(e) })
            }
            let slots = try ProcessedDatabase.changedSlots(of: updated, buckets: touched, parameters: parameters)
            try ShardFile.patch(&file, with: slots, context: context)
            #expect(file == (try encoded(updated)), "round \(round): the patched shard differs from a full encoding")
            table = updated
        }
        // Buckets over their budget, or a bucket list of the wrong length, are refused.
        var overfull = table.buckets
        overfull[0].entries += Array(repeating: HashBucket.Entry(keywordHash: 1, value: [UInt8](repeating: 1, count: 100)), count: bucketBytes / 100)
        #expect(throws: PIRError.self) { try CuckooTable(config: table.config, bucketsPerTable: table.bucketsPerTable, buckets: overfull) }
        #expect(throws: PIRError.self) {
            try CuckooTable(config: table.config, bucketsPerTable: table.bucketsPerTable, buckets: Array(table.buckets.dropLast()))
        }
        var removedTwice = table
        #expect(throws: PIRError.self) { try removedTwice.update(removing: [entries[0].keywordHash, entries[0].keywordHash], changing: [], adding: []) }
    }

    @Test("an addition a full table cannot hold reports that the shard must be laid out again")
    func fullTable() throws {
        var rng = TestRandom()
        let config = try CuckooTableConfig(maxEvictionCount: 20, maxSerializedBucketSize: 64, bucketCount: .fixedSize(bucketCount: 8))
        var entries: [HashBucket.Entry] = []
        var table = try CuckooTable(config: config, entries: [])
        while true {
            let e = Self.entry(&rng, maxValue: 4)
            guard let touched = try table.update(removing: [], changing: [], adding: [e]) else { break }
            #expect(!touched.isEmpty)
            entries.append(e)
            #expect(entries.count < 200, "a table of 8 buckets of 64 bytes cannot take 200 entries")
            if entries.count >= 200 { return }
        }
        #expect(entries.count > 8)
    }
}
