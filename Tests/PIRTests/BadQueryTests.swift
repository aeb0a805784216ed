import BFV
import LookupProtocol
import PIR
import Testing

/// Queries that do not fit the shard get typed errors before any computation, never a crash.
@Suite("Bad queries")
struct BadQueryTests {
    struct Fixture {
        let context: Context
        let server: MulPirServer
        let client: KeywordPirClient
        let secretKey: SecretKey
        let key: EvaluationKey
        let query: [Ciphertext]

        init() throws {
            let options = ProcessingOptions(encryption: EncryptionParameters(.n_4096_logq_27_28_28_logt_5))
            context = try Context(parameters: options.encryption)
            let rows = (0..<500).map { (keyword: Array("+1650555\(1000 + $0)".utf8), value: [UInt8(1)]) }
            let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: 1, sharding: .sha256)[0]
            let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: options, maxValueLength: 1,
                                                             context: context)
            server = try MulPirServer(context: context, database: shard.database, threads: 1)
            client = try KeywordPirClient(context: context, shards: [shard.parameters], sharding: .sha256)
            secretKey = SecretKey(context: context)
            key = try EvaluationKey(config: shard.evaluationKeyConfig, secretKey: secretKey)
            query = try client.generateQuery(keyword: rows[0].keyword, secretKey: secretKey).query
        }
    }

    @Test("wrong ciphertext count, PIR-call count, moduli and missing keys")
    func shapes() throws {
        let f = try Fixture()
        #expect(throws: PIRError.self) { try f.server.computeResponse(query: f.query + f.query, pirCalls: 2, evaluationKey: f.key) }
        #expect(throws: PIRError.self) { try f.server.computeResponse(query: [], pirCalls: 2, evaluationKey: f.key) }
        #expect(throws: PIRError.self) { try f.server.computeResponse(query: f.query, pirCalls: 1, evaluationKey: f.key) }
        let single = try f.query.map { try f.context.modSwitchDownToSingle($0) }
        #expect(throws: PIRError.self) { try f.server.computeResponse(query: single, pirCalls: 2, evaluationKey: f.key) }
        let noGalois = EvaluationKey(galoisKeys: [:], relinearizationKey: f.key.relinearizationKey)
        #expect(throws: PIRError.self) { try f.server.computeResponse(query: f.query, pirCalls: 2, evaluationKey: noGalois) }
        let noRelin = EvaluationKey(galoisKeys: f.key.galoisKeys, relinearizationKey: nil)
        #expect(throws: PIRError.self) { try f.server.computeResponse(query: f.query, pirCalls: 2, evaluationKey: noRelin) }
        // The well-formed query still works after all that.
        #expect(try f.server.computeResponse(query: f.query, pirCalls: 2, evaluationKey: f.key).count == 2)
    }

    @Test("shard index out of range")
    func shardIndex() throws {
        let f = try Fixture()
        let set = try ShardSet(servers: [f.server])
        #expect(throws: PIRError.shardIndexOutOfRange(index: 1, shardCount: 1)) { try set.server(forShard: 1) }
        #expect(throws: PIRError.shardIndexOutOfRange(index: -1, shardCount: 1)) { try set.server(forShard: -1) }
        _ = try set.server(forShard: 0)
    }

    @Test("truncated and corrupted query bytes")
    func bytes() throws {
        let f = try Fixture()
        let good = try ProtoEncryptedIndices(f.query, pirCalls: 2).serializedBytes() as [UInt8]
        #expect(try ProtoEncryptedIndices(serializedBytes: good).native(context: f.context).count == f.query.count)
        for cut in [1, 10, 100, good.count / 2, good.count - 1] {
            #expect(throws: (any Error).self) {
                try ProtoEncryptedIndices(serializedBytes: Array(good.prefix(cut))).native(context: f.context)
            }
        }
        #expect(throws: (any Error).self) { try ProtoEncryptedIndices().native(context: f.context) }
    }

    @Test("shard files of both versions: round trip, corruption and wrong parameters are detected")
    func shardFile() throws {
        let f = try Fixture()
        let options = ProcessingOptions(encryption: EncryptionParameters(.n_4096_logq_27_28_28_logt_5))
        let rows = (0..<300).map { (keyword: Array("+1415555\(1000 + $0)".utf8), value: [UInt8($0 & 1)]) }
        let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: 1, sharding: .sha256)[0]
        let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: options, maxValueLength: 1,
                                                         context: f.context)
        let version1 = try ShardFile.serializeVersion1(shard.database, parameterBlob: [1, 2, 3], context: f.context)
        #expect(version1.count % 4096 == 0)
        let payloads = try KeywordDatabaseProcessor.payloads(of: shard.table, parameters: shard.parameters)
        let version2 = try ShardFile.serialize(payloads: payloads, parameters: shard.parameters, parameterBlob: [1, 2, 3])
        #expect(version2.count * 8 < version1.count, "payloads are a fraction of the evaluation form")
        #expect(try ShardFile.payloads(version2, context: f.context) == payloads)
        for bytes in [version1, version2] {
            let back = try ShardFile.deserialize(bytes, context: f.context)
            #expect(back.parameterBlob == [1, 2, 3])
            #expect(back.tables.count == shard.database.tables.count)
            for (a, b) in zip(back.tables, shard.database.tables) { #expect(a == b) }
            var corrupted = bytes
            corrupted[corrupted.count - 5] ^= 1
            #expect(throws: PIRError.malformedDatabase("shard file checksum mismatch")) { try ShardFile.deserialize(corrupted, context: f.context) }
            #expect(throws: PIRError.self) { try ShardFile.deserialize(Array(bytes.dropLast(64)), context: f.context) }
            #expect(throws: PIRError.self) { try ShardFile.deserialize(Array(bytes.prefix(20)), context: f.context) }
            var badVersion = bytes
            badVersion[8] = 9
            #expect(throws: PIRError.self) { try ShardFile.deserialize(badVersion, context: f.context) }
            let other = try Context(preset: .n_8192_logq_3x55_logt_24)
            #expect(throws: PIRError.self) { try ShardFile.deserialize(bytes, context: other) }
        }
        var badBits = version2
        badBits[32] = 40
        #expect(throws: PIRError.self) { try ShardFile.deserialize(badBits, context: f.context) }
        #expect(throws: PIRError.self) { try ShardFile.payloads(version1, context: f.context) }
    }
}
