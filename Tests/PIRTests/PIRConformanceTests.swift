import BFV
import ConformanceSupport
import Foundation
import LookupProtocol
import PIR
import SwiftProtobuf
import Testing

/// The reference's keyword-PIR cases (`../shared/conformance/pir/`): our encoding of the reference's buckets is
/// byte-identical to its processed shards, our server answers its stored queries with its stored keys so that
/// its secret key decrypts the expected values, and our hashing places every row where it did.
@Suite("Keyword-PIR conformance cases", .enabled(if: Conformance.available, Comment(rawValue: Conformance.skipMessage)))
struct PIRConformanceTests {
    /// Everything a case needs.
    struct Case {
        let name: String
        let manifest: Vector
        let context: Context
        let secretKey: SecretKey
        let evaluationKey: EvaluationKey
        let sharding: ShardingFunction
        let shards: [Int: (parameters: MulPirParameters, database: ProcessedDatabase)]

        init(_ name: String) throws {
            self.name = name
            manifest = try Conformance.pirManifest(name)
            var shards: [Int: (MulPirParameters, ProcessedDatabase)] = [:]
            var context: Context?
            var sharding: ShardingFunction = .sha256
            for shard in try manifest.sub("sharding").uints("shards_with_files").map({ Int($0) }) {
                let proto = try ProtoPirParameters(textFormatString: try Conformance.pirText(name, "shard-\(shard).params.txtpb"))
                let parameters = try proto.native()
                sharding = try proto.shardingFunction()
                let ctx = try context ?? Context(parameters: parameters.encryption)
                context = ctx
                let db = try ProcessedDatabase(referenceFormat: try Conformance.pirFile(name, "shard-\(shard).bin"),
                                               parameters: parameters, context: ctx)
                shards[shard] = (parameters, db)
            }
            guard let ctx = context else { throw VectorError.malformed("\(name): no shards") }
            self.context = ctx
            self.sharding = sharding
            self.shards = shards.mapValues { (parameters: $0.0, database: $0.1) }
            let sk = try ProtoSecretKey(serializedBytes: try Conformance.pirFile(name, "secret-key.binpb"))
            secretKey = try SecretKey(deserialize: [UInt8](sk.polys), context: ctx)
            let ek = try ProtoEvaluationKey(serializedBytes: try Conformance.pirFile(name, "evaluation-key.binpb"))
            evaluationKey = try EvaluationKey(deserialize: try ek.native(), context: ctx)
        }
    }

    @Test("(c) hashing: keyword hashes, shards and candidate buckets of every row", arguments: Conformance.pirCaseNames)
    func hashing(caseName: String) throws {
        let manifest = try Conformance.pirManifest(caseName)
        let sharding = manifest.object["sharding"] as? [String: Any]
        let shardCount = (sharding?["shard_count"] as? NSNumber)?.intValue ?? 1
        let function: ShardingFunction = (sharding?["function"] as? String) == "doubleMod"
            ? .doubleMod(otherShardCount: (sharding?["other_shard_count"] as? NSNumber)?.intValue ?? 0) : .sha256
        let h = try manifest.int("hash_function_count")
        var rows = 0
        for shard in try manifest.subs("shards") {
            let index = try shard.int("shard_index")
            let n = try shard.int("num_entries")
            for row in try Conformance.pirCSV(caseName, "shard-\(index).buckets.csv") {
                let table = Int(row[0]) ?? -1
                let bucket = Int(row[1]) ?? -1
                let hash = KeywordHash.hash(row[3])
                #expect(function.shardIndex(keywordHash: hash, shardCount: shardCount) == index)
                #expect(CuckooHashing.candidates(keywordHash: hash, bucketsPerTable: n, hashFunctionCount: h)[table] == bucket,
                        "\(row[3]) table \(table)")
                rows += 1
            }
        }
        #expect(rows == (try manifest.int("row_count")))
        for q in try manifest.subs("queries") {
            let hash = KeywordHash.hash(try q.string("keyword"))
            #expect(String(hash) == (try q.string("keyword_hash_u64")))
            let shard = function.shardIndex(keywordHash: hash, shardCount: shardCount)
            #expect(shard == (try q.int("shard_index")))
            let n = try manifest.subs("shards").first { (try? $0.int("shard_index")) == shard }?.int("num_entries") ?? 0
            #expect(CuckooHashing.candidates(keywordHash: hash, bucketsPerTable: n, hashFunctionCount: h)
                        == (try q.uints("candidate_indices").map { Int($0) }))
        }
        print("checked pir/\(caseName): hashing of \(rows) rows")
    }

    @Test("(a) encoding the reference's buckets gives its processed shard byte for byte", arguments: Conformance.pirCaseNames)
    func encoding(caseName: String) throws {
        let c = try Case(caseName)
        var values: [String: [UInt8]] = [:]
        for row in try Conformance.pirCSV(caseName, "database.csv") { values[row[0]] = hexDecode(row[1]) }
        for (index, shard) in c.shards.sorted(by: { $0.key < $1.key }) {
            let p = shard.parameters
            var buckets = [[HashBucket]](repeating: [HashBucket](repeating: HashBucket(), count: p.entryCount), count: p.batchSize)
            for row in try Conformance.pirCSV(caseName, "shard-\(index).buckets.csv") {
                let (table, bucket, slot) = (Int(row[0]) ?? 0, Int(row[1]) ?? 0, Int(row[2]) ?? 0)
                #expect(slot == buckets[table][bucket].entries.count)
                let value = try #require(values[row[3]])
                buckets[table][bucket].entries.append(.init(keywordHash: KeywordHash.hash(row[3]), value: value))
            }
            let ours = try ProcessedDatabase(parameters: p, tableEntries: buckets.map { $0.map { $0.serialize() } },
                                             context: c.context)
            #expect(ours.serializeReferenceFormat() == (try Conformance.pirFile(caseName, "shard-\(index).bin")),
                    "shard \(index) bytes")
        }
        print("checked pir/\(caseName): encoding of \(c.shards.count) shard(s)")
    }

    @Test("(b) our server answers the reference's queries with the reference's keys", arguments: Conformance.pirCaseNames)
    func answers(caseName: String) throws {
        let c = try Case(caseName)
        var answered = 0
        for q in try c.manifest.subs("queries") {
            let id = try q.string("id")
            let request = try ProtoPIRRequest(serializedBytes: try Conformance.pirFile(caseName, try q.string("request")))
            // Protobuf round trip of what the device sent.
            #expect(try request.serializedBytes() == (try Conformance.pirFile(caseName, try q.string("request"))))
            let shard = Int(request.shardIndex)
            #expect(shard == (try q.int("shard_index")))
            let (parameters, database) = try #require(c.shards[shard])
            let server = try MulPirServer(context: c.context, database: database)
            let query = try request.query.native(context: c.context)
            let replies = try server.computeResponse(query: query, pirCalls: Int(request.query.numPirCalls),
                                                     evaluationKey: c.evaluationKey)
            // Through the wire form, as the device receives it.
            let wire = try ProtoPIRResponse(replies: replies).serializedBytes() as [UInt8]
            let received = try ProtoPIRResponse(serializedBytes: wire).native(context: c.context)
            let client = try MulPirClient(context: c.context, parameters: parameters)
            let candidates = try q.uints("candidate_indices").map { Int($0) }
            let expectedEntries = try q.strings("decrypted_entries_hex")
            for (j, reply) in received.enumerated() {
                #expect(reply.count == parameters.chunkCount)
                let entry = try client.decrypt(reply: reply, index: candidates[j], secretKey: c.secretKey)
                #expect(entry == hexDecode(expectedEntries[j]), "\(id) reply \(j)")
            }
            let keywordClient = try KeywordPirClient(context: c.context, shards: (0..<c.shardCount).map { c.parameters(shard: $0) },
                                                     sharding: c.sharding)
            let value = try keywordClient.decrypt(replies: received, keyword: Array(try q.string("keyword").utf8),
                                                  secretKey: c.secretKey)
            if q.isNull("expected_value_hex") {
                #expect(value == nil, "\(id) should be absent")
            } else {
                #expect(value == hexDecode(try q.string("expected_value_hex")), "\(id) value")
            }
            answered += 1
        }
        print("checked pir/\(caseName): answered \(answered) reference queries")
    }
}

extension PIRConformanceTests.Case {
    /// Shard count of the case.
    var shardCount: Int { (try? manifest.sub("sharding").int("shard_count")) ?? 1 }

    /// Parameters of a shard (every case ships files for every shard).
    func parameters(shard: Int) -> MulPirParameters {
        shards[shard]?.parameters ?? shards.sorted { $0.key < $1.key }[0].value.parameters
    }
}
