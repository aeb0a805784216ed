import BFV
import ConformanceSupport
import PIR
import Testing

/// A server built straight from a shard file (each plaintext packed into the scan layout as it is read) answers
/// byte for byte as one built from the file's whole database, for both file versions, and refuses what the other
/// path refuses with the same error.
@Suite("Shard files loaded into the scan layout")
struct ShardFileLoadTests {
    @Test("both file versions answer as the server built from the whole database, every answer decrypted")
    func answersMatch() throws {
        var rng = TestRandom()
        let (shard, context, rows) = try ScanFileTests.shard(rows: 1200, valueBytes: 1...40, using: &rng)
        let whole = try MulPirServer(context: context, database: shard.database, threads: 1)
        let files = [try ShardFile.serialize(shard.database, parameterBlob: [], context: context),
                     try ShardFile.serializeVersion1(shard.database, parameterBlob: [], context: context)]
        let streamed = try files.map { try MulPirServer(context: context, parameters: shard.parameters, shardFile: $0, threads: 1) }
        for server in streamed { #expect(server.databaseBytes == whole.databaseBytes && server.supportsScanFile) }
        try ScanFileTests.expectSameAnswers(streamed, as: whole, shard: shard, context: context, rows: rows, using: &rng)
    }

    @Test("a damaged file, or one of another shard's shape, is refused as building its whole database refuses it")
    func refusals() throws {
        var rng = TestRandom()
        let (shard, context, _) = try ScanFileTests.shard(rows: 300, valueBytes: 1...8, using: &rng)
        let (other, _, _) = try ScanFileTests.shard(rows: 3000, valueBytes: 1...8, using: &rng)
        #expect(other.parameters.chunkCount * other.parameters.slotsPerChunk != shard.parameters.chunkCount * shard.parameters.slotsPerChunk)
        let file = try ShardFile.serialize(shard.database, parameterBlob: [], context: context)
        var damaged = file
        damaged[damaged.count - 1] ^= 1
        let cases: [(bytes: [UInt8], parameters: MulPirParameters)] = [
            (damaged, shard.parameters), (Array(file.dropLast(64)), shard.parameters), (file, other.parameters),
        ]
        for (bytes, parameters) in cases {
            var expected: PIRError?
            do {
                _ = try ProcessedDatabase(shardFile: bytes, parameters: parameters, context: context)
            } catch let error as PIRError {
                expected = error
            }
            let wanted = try #require(expected)
            #expect(throws: wanted) { try MulPirServer(context: context, parameters: parameters, shardFile: bytes, threads: 1) }
        }
    }
}
