import ConformanceSupport
import BFV
import PIR
import Testing

/// Our own processing end to end: rows → shards → cuckoo tables → plaintexts, answered by our server and read by
/// our client, for present and absent keywords; and no row is ever lost by the cuckoo builder.
@Suite("Processing and round trips with our client")
struct ProcessingRoundTripTests {
    static func phoneNumbers(_ count: Int, using rng: inout some RandomNumberGenerator) -> [String] {
        var seen = Set<String>()
        while seen.count < count {
            seen.insert("+1" + String(UInt64.random(in: 2_000_000_000...9_999_999_999, using: &rng)))
        }
        return Array(seen)
    }

    static func roundTrip(rows: [(keyword: [UInt8], value: [UInt8])], absent: [[UInt8]], options: ProcessingOptions,
                          queries: Int) throws {
        var rng = TestRandom()
        let context = try Context(parameters: options.encryption)
        let shardEntries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: options.shardCount, sharding: options.sharding)
        let maxValue = rows.map(\.value.count).max() ?? 0
        let shards = try shardEntries.enumerated().map {
            try KeywordDatabaseProcessor.process(shard: $0.offset, entries: $0.element, options: options,
                                                 maxValueLength: maxValue, context: context)
        }
        // Every row is in one of its candidate buckets.
        for shard in shards {
            for entry in shardEntries[shard.index] {
                let found = shard.table.candidateBuckets(keywordHash: entry.keywordHash).contains { b in
                    shard.table.buckets[b].value(forKeywordHash: entry.keywordHash) == entry.value
                }
                #expect(found)
            }
        }
        let union = EvaluationKeyConfig(galoisElements: Array(Set(shards.flatMap(\.evaluationKeyConfig.galoisElements))).sorted(),
                                        hasRelinearizationKey: true)
        let sk = SecretKey(context: context)
        let key = try EvaluationKey(config: union, secretKey: sk)
        let client = try KeywordPirClient(context: context, shards: shards.map(\.parameters), sharding: options.sharding)
        var asked: [([UInt8], [UInt8]?)] = (0..<queries).map { _ in
            let row = rows[Int.random(in: 0..<rows.count, using: &rng)]
            return (row.keyword, row.value)
        }
        asked += absent.map { ($0, nil) }
        for (keyword, expected) in asked {
            let (shard, query) = try client.generateQuery(keyword: keyword, secretKey: sk)
            let server = try MulPirServer(context: context, database: shards[shard].database)
            let replies = try server.computeResponse(query: query, pirCalls: options.hashFunctionCount, evaluationKey: key)
            #expect(try client.decrypt(replies: replies, keyword: keyword, secretKey: sk) == expected)
        }
    }

    @Test("10,000 block rows: present and absent numbers")
    func blockRoundTrip() throws {
        var rng = TestRandom()
        let numbers = Self.phoneNumbers(10_002, using: &rng)
        let rows = numbers.dropLast(2).map { (keyword: Array($0.utf8), value: [UInt8.random(in: 0...1, using: &rng)]) }
        try Self.roundTrip(rows: Array(rows), absent: numbers.suffix(2).map { Array($0.utf8) },
                           options: ProcessingOptions(encryption: EncryptionParameters(.n_4096_logq_27_28_28_logt_5)),
                           queries: 3)
    }

    @Test("identity values larger than a plaintext, 4 shards with doubleMod, hybrid key compression")
    func identityRoundTrip() throws {
        var rng = TestRandom()
        let numbers = Self.phoneNumbers(201, using: &rng)
        let rows = numbers.dropLast().map { number in
            (keyword: Array(number.utf8),
             value: (0..<Int.random(in: 100...3000, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        let options = ProcessingOptions(encryption: EncryptionParameters(.n_4096_logq_27_28_28_logt_5), shardCount: 4,
                                        sharding: .doubleMod(otherShardCount: 10), keyCompression: .hybrid)
        try Self.roundTrip(rows: Array(rows), absent: [Array(numbers[200].utf8)], options: options, queries: 1)
    }

    @Test("fixed-size tables keep their size, and overfull ones fail loudly")
    func fixedSize() throws {
        var rng = TestRandom()
        let entries = Self.phoneNumbers(500, using: &rng).map { HashBucket.Entry(keywordHash: KeywordHash.hash($0), value: [1]) }
        let config = try CuckooTableConfig(maxSerializedBucketSize: 1024, bucketCount: .fixedSize(bucketCount: 20))
        let table = try CuckooTable(config: config, entries: entries)
        #expect(table.bucketsPerTable == 10)
        #expect(table.entryCount == 500)
        let tiny = try CuckooTableConfig(maxSerializedBucketSize: 1024, bucketCount: .fixedSize(bucketCount: 2))
        #expect(throws: PIRError.self) { try CuckooTable(config: tiny, entries: entries) }
        #expect(throws: PIRError.self) {
            try KeywordDatabaseProcessor.shard(rows: [(Array("+1".utf8), [1]), (Array("+1".utf8), [0])], shardCount: 1, sharding: .sha256)
        }
    }

    @Test("no row is lost: 100,000 rows with large identity values")
    func noRowLoss() throws {
        var rng = TestRandom()
        // Values of 3,000–6,000 bytes; a few shared arrays keep memory small, only their sizes matter here.
        let shapes = (0..<64).map { i in [UInt8](repeating: UInt8(i), count: 3000 + i * 47) }
        let entries = (0..<100_000).map { i in
            HashBucket.Entry(keywordHash: KeywordHash.hash("+1555" + String(1_000_000 + i)),
                             value: shapes[Int.random(in: 0..<shapes.count, using: &rng)])
        }
        let options = ProcessingOptions(encryption: EncryptionParameters(.n_4096_logq_27_28_28_logt_5))
        let (table, parameters, _) = try KeywordDatabaseProcessor.layout(entries: entries, options: options,
                                                                         maxValueLength: shapes.map(\.count).max() ?? 0)
        #expect(table.entryCount == entries.count)
        var missing = 0
        for e in entries {
            let found = table.candidateBuckets(keywordHash: e.keywordHash).contains { b in
                table.buckets[b].entries.contains { $0.keywordHash == e.keywordHash && $0.value.count == e.value.count }
            }
            if !found { missing += 1 }
        }
        #expect(missing == 0)
        print("100,000 large rows: \(table.bucketsPerTable) buckets per table after \(table.expansions) expansions, "
            + "entry size \(parameters.entrySize), dimensions \(parameters.dimensions)")
    }
}
