import ConformanceSupport
import BFV
import PIR
import Testing

/// Known-answer tests from SPEC-PIR (taken there from the reference's own test suite).
@Suite("Keyword-PIR known answers")
struct KnownAnswerTests {
    @Test("shard indices (sha256 and doubleMod)")
    func shards() {
        let k0 = KeywordHash.hash([0, 0, 0, 0])
        let k1 = KeywordHash.hash([1, 2, 3])
        let k2 = KeywordHash.hash([3, 2, 1])
        #expect(ShardingFunction.sha256.shardIndex(keywordHash: k0, shardCount: 41) == 2)
        #expect([k0, k1, k2].map { ShardingFunction.sha256.shardIndex(keywordHash: $0, shardCount: 1001) } == [635, 903, 842])
        let d = ShardingFunction.doubleMod(otherShardCount: 2000)
        #expect(d.shardIndex(keywordHash: k0, shardCount: 41) == 32)
        #expect([k0, k1, k2].map { d.shardIndex(keywordHash: $0, shardCount: 1001) } == [319, 922, 328])
    }

    @Test("cuckoo candidate buckets")
    func candidates() {
        #expect(CuckooHashing.candidates(keywordHash: KeywordHash.hash([0, 1, 2, 3]), bucketsPerTable: 8, hashFunctionCount: 3)
                    == [7, 3, 0])
        #expect(CuckooHashing.candidates(keywordHash: KeywordHash.hash([3, 2, 1, 0]), bucketsPerTable: 2048, hashFunctionCount: 5)
                    == [1989, 1767, 1260, 242, 1122])
    }

    @Test("bucket bytes")
    func bucket() throws {
        let hello = HashBucket(entries: [.init(keywordHash: KeywordHash.hash("Hello"), value: Array("World".utf8))])
        #expect(hello.serialize() == hex("01185f8db32271fe250500576f726c64"))
        let three = hex("03185f8db32271fe250500") + Array("World".utf8) + hex("527511deafdcd34a0600") + Array("Maailm".utf8)
            + hex("c015ad6ddaf8bb500800") + Array("Darkness".utf8)
        #expect(three.count == 50)
        let parsed = try HashBucket(deserialize: three + [0, 0, 0])
        #expect(parsed.entries.count == 3)
        #expect(parsed.value(forKeywordHash: KeywordHash.hash("Hello")) == Array("World".utf8))
        #expect(parsed.value(forKeywordHash: KeywordHash.hash("Goodbye")) == Array("Darkness".utf8))
        #expect(parsed.value(forKeywordHash: KeywordHash.hash("absent")) == nil)
        #expect(parsed.serialize() == three)
        #expect(throws: PIRError.self) { try HashBucket(deserialize: Array(three.prefix(30))) }
        #expect(throws: PIRError.self) { try HashBucket(deserialize: [UInt8]()) }
    }

    @Test("dimensions")
    func dimensions() {
        #expect(MulPirParameters.dimensions(plaintexts: 16, dimensionCount: 2, batchSize: 1, uneven: false) == [4, 4])
        #expect(MulPirParameters.dimensions(plaintexts: 10, dimensionCount: 2, batchSize: 2, uneven: false) == [4, 3])
        #expect(MulPirParameters.dimensions(plaintexts: 15, dimensionCount: 2, batchSize: 1, uneven: true) == [5, 3])
        #expect(MulPirParameters.dimensions(plaintexts: 15, dimensionCount: 2, batchSize: 2, uneven: true) == [5, 3])
        #expect(MulPirParameters.dimensions(plaintexts: 17, dimensionCount: 2, batchSize: 2, uneven: true) == [9, 2])
        #expect(MulPirParameters.dimensions(plaintexts: 100, dimensionCount: 2, batchSize: 2, uneven: true) == [25, 4])
    }

    @Test("Galois element sets")
    func galois() {
        #expect(MulPirParameters.galoisElements(expandedCount: 62, degree: 4096, compression: .none) == [129, 257, 513, 1025, 2049, 4097])
        #expect(MulPirParameters.galoisElements(expandedCount: 62, degree: 4096, compression: .hybrid) == [129, 1025])
        #expect(MulPirParameters.galoisElements(expandedCount: 62, degree: 4096, compression: .maximum) == [129])
        #expect(MulPirParameters.galoisElements(expandedCount: 58, degree: 16, compression: .none) == [3, 5, 9, 17])
        #expect(MulPirParameters.galoisElements(expandedCount: 58, degree: 16, compression: .hybrid) == [3, 5, 9, 17])
        #expect(MulPirParameters.galoisElements(expandedCount: 58, degree: 16, compression: .maximum) == [3, 5, 9])
        // The 10k-row block shard of SPEC-HE §13: [10,3] dimensions, batch 2 → 26 outputs.
        #expect(MulPirParameters.galoisElements(expandedCount: 26, degree: 4096, compression: .none) == [257, 513, 1025, 2049, 4097])
    }

    @Test("byte ↔ coefficient packing")
    func packing() {
        #expect(BytePacking.coefficients(from: [0xAB, 0xCD], bitsPerCoefficient: 4) == [0xA, 0xB, 0xC, 0xD])
        #expect(BytePacking.coefficients(from: [0xFF], bitsPerCoefficient: 3) == [7, 7, 6])
        #expect(BytePacking.bytes(from: [0xA, 0xB, 0xC, 0xD], bitsPerCoefficient: 4) == [0xAB, 0xCD])
        var rng = TestRandom()
        for bits in 1...16 {
            let bytes = (0..<37).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let back = BytePacking.bytes(from: BytePacking.coefficients(from: bytes, bitsPerCoefficient: bits), bitsPerCoefficient: bits)
            #expect(Array(back.prefix(bytes.count)) == bytes)
        }
    }
}

func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var it = s.makeIterator()
    while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16) ?? 0) }
    return out
}
