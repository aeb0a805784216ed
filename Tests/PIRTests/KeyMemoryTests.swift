import BFV
import LookupProtocol

@testable import PIR
import Testing

/// What a parsed evaluation key costs in memory, which the parsed-key cache charges: parsed in full, its 64-bit
/// coefficients and the 32-bit narrow copies (12 bytes per residue), about seven times the serialized (seeded, packed)
/// key; in the compute form a server caches, the 32-bit rows alone (4 bytes per residue).
@Suite("Parsed key memory")
struct KeyMemoryTests {
    @Test("memoryBytes counts every polynomial and narrow copy, 6–12× the serialized size")
    func footprint() throws {
        let (shard, context) = try smallBlockShard()
        let key = try EvaluationKey(config: shard.evaluationKeyConfig, secretKey: SecretKey(context: context))
        let serialized: [UInt8] = try ProtoEvaluationKey(key.serialize()).serializedBytes()
        let parsed = try ProtoEvaluationKey.evaluationKey(serialized: serialized, context: context)
        let polynomials = parsed.galoisKeys.values.flatMap(\.ciphertexts).flatMap(\.polys)
        #expect(!polynomials.isEmpty)
        let wide = polynomials.reduce(0) { $0 + $1.data.count * 8 }
        #expect(parsed.memoryBytes >= wide)  // plus the narrow copies when the key context fits 32-bit words
        let ratio = Double(parsed.memoryBytes) / Double(serialized.count)
        #expect(ratio > 6 && ratio < 12, "parsed \(parsed.memoryBytes) B for \(serialized.count) serialized B: \(ratio)×")
    }

    @Test("The compute form keeps only the 32-bit rows (a third of the parsed bytes), answers word for word like the full key, and serializes back to an equal key")
    func computeForm() throws {
        let f = try BadQueryTests.Fixture()
        let serialized: [UInt8] = try ProtoEvaluationKey(f.key.serialize()).serializedBytes()
        let parsed = try ProtoEvaluationKey.evaluationKey(serialized: serialized, context: f.context)
        let compact = parsed.computeForm()
        // Parsed straight into the compute form: the same words.
        #expect(try ProtoEvaluationKey.computeFormKey(serialized: serialized, context: f.context) == compact)
        print("parsed key \(parsed.memoryBytes) B, compute form \(compact.memoryBytes) B")
        #expect(compact.memoryBytes * 3 == parsed.memoryBytes)
        let full = try f.server.computeResponse(query: f.query, pirCalls: 2, evaluationKey: parsed)
        let lean = try f.server.computeResponse(query: f.query, pirCalls: 2, evaluationKey: compact)
        #expect(full.flatMap { $0 }.map { $0.polys.map(\.data) } == lean.flatMap { $0 }.map { $0.polys.map(\.data) })
        #expect(try f.client.decrypt(replies: lean, keyword: Array("+16505551000".utf8), secretKey: f.secretKey) == [1])
        // Rebuilt from the rows: the same key, in full (unseeded) form on the wire.
        let again = try EvaluationKey(deserialize: compact.serialize(), context: f.context)
        #expect(again == parsed && again.computeForm() == compact)
    }
}
