import BFV
import ConformanceSupport
import Foundation
import LookupProtocol
import SwiftProtobuf
import Testing

/// The reference's HE vectors that go through protobuf: parsing the reference's ciphertexts and keys,
/// decryption, encryption with a given key and seed, key switching, modulus switching and byte-identical
/// re-serialization (SPEC-HE §15.3 steps 5–9).
@Suite("HE conformance vectors (wire level)", .enabled(if: Conformance.available, Comment(rawValue: Conformance.skipMessage)))
struct HEConformanceTests {
    /// Everything one vector file sets up: the context, the deterministic secret key and the seeded ciphertext.
    struct Fixture {
        let vector: Vector
        let context: Context
        let secretKey: SecretKey
        let seeded: Ciphertext
        let plaintextValues: [UInt64]

        init(_ file: String) throws {
            vector = try Conformance.heVector(file)
            let proto = try ProtoEncryptionParameters(serializedBytes: try vector.hex("encryptionParametersProto"))
            context = try Context(parameters: try proto.native())
            let skProto = try ProtoSecretKey(serializedBytes: try vector.sub("secretKey").hex("proto"))
            secretKey = try SecretKey(deserialize: [UInt8](skProto.polys), context: context)
            let sc = try vector.sub("seededCiphertext")
            let ctProto = try ProtoSerializedCiphertext(serializedBytes: try sc.hex("proto"))
            seeded = try Ciphertext(deserialize: try ctProto.native(), context: context,
                                    moduliCount: context.ciphertextContext.rowCount, format: .coeff)
            plaintextValues = try sc.uints("plaintextValues")
        }
    }

    @Test("EncryptionParameters and EvaluationKeyConfig bytes", arguments: Conformance.heVectorNames)
    func parameters(file: String) throws {
        let f = try Fixture(file)
        let ours = try ProtoEncryptionParameters(f.context.parameters).deterministicBytes()
        #expect(ours == (try f.vector.hex("encryptionParametersProto")))
        if f.vector.has("evaluationKey") {
            let ek = try f.vector.sub("evaluationKey")
            let config = EvaluationKeyConfig(galoisElements: try ek.uints("galoisElements").map { Int($0) },
                                             hasRelinearizationKey: true)
            let bytes = try ProtoEvaluationKeyConfig(config, parameters: f.context.parameters).deterministicBytes()
            #expect(bytes == (try ek.hex("configProto")))
        }
        print("checked \(file): parameters")
    }

    @Test("secret key proto round trip", arguments: Conformance.heVectorNames)
    func secretKeyProto(file: String) throws {
        let f = try Fixture(file)
        let proto = ProtoSecretKey.with { $0.polys = Data(f.secretKey.serialize()) }
        #expect(try proto.deterministicBytes() == (try f.vector.sub("secretKey").hex("proto")))
    }

    @Test("seeded ciphertext: parse, decrypt, re-serialize", arguments: Conformance.heVectorNames)
    func seededCiphertext(file: String) throws {
        let f = try Fixture(file)
        let sc = try f.vector.sub("seededCiphertext")
        #expect(f.seeded.polys[0].rows == (try sc.rows("c0Coeff")))
        #expect(f.seeded.polys[1].rows == (try sc.rows("c1Coeff")))
        let result = try f.context.decryptWithNoiseBudget(f.seeded, secretKey: f.secretKey)
        #expect(result.plaintext.values == f.plaintextValues)
        #expect(abs(result.noiseBudget - (try sc.double("noiseBudget"))) < 0.01)
        let bytes = try ProtoSerializedCiphertext(f.seeded.serialize()).deterministicBytes()
        #expect(bytes == (try sc.hex("proto")))
        print("checked \(file): seeded ciphertext, budget \(result.noiseBudget)")
    }

    @Test("encryption with the reference's key and seed", arguments: Conformance.heVectorNames)
    func encryptWithSeed(file: String) throws {
        let f = try Fixture(file)
        guard case let .seeded(_, seed) = f.seeded.serialize() else {
            Issue.record("vector ciphertext is not seeded")
            return
        }
        var errors = SystemByteSource()
        let pt = try f.context.encodeCoefficients(f.plaintextValues)
        let ours = try f.context.encrypt(pt, secretKey: f.secretKey, seed: seed, errorSource: &errors)
        // Same seed, so c1 is identical; c0 differs only by the difference of two fresh errors (|e| ≤ 21 each).
        #expect(ours.polys[1] == f.seeded.polys[1])
        var diff = ours.polys[0]
        try diff.subtract(f.seeded.polys[0])
        let q = diff.context.moduli
        let n = f.context.degree
        for r in 0..<q.count {
            for j in 0..<n { #expect(abs(q[r].centered(diff.data[r * n + j])) <= 42) }
        }
        #expect(try f.context.decrypt(ours, secretKey: f.secretKey).values == f.plaintextValues)
        print("checked \(file): encryption with given key and seed")
    }

    @Test("full ciphertext bytes", arguments: Conformance.heVectorNames)
    func fullCiphertext(file: String) throws {
        let f = try Fixture(file)
        var full = f.seeded
        full.seed = nil
        let expected = try f.vector.sub("fullCiphertext").hex("proto")
        #expect(try ProtoSerializedCiphertext(full.serialize()).deterministicBytes() == expected)
        let parsed = try Ciphertext(deserialize: try ProtoSerializedCiphertext(serializedBytes: expected).native(),
                                    context: f.context, moduliCount: f.context.ciphertextContext.rowCount, format: .coeff)
        #expect(parsed == full)
        print("checked \(file): full ciphertext")
    }

    @Test("modulus switching to the response format", arguments: Conformance.heVectorNames)
    func modSwitch(file: String) throws {
        let f = try Fixture(file)
        guard f.vector.has("modSwitchedForDecryption") else { return }
        let ms = try f.vector.sub("modSwitchedForDecryption")
        let single = try f.context.modSwitchDownToSingle(f.seeded)
        #expect(single.polys[0].rows == (try ms.rows("c0CoeffBeforeTruncation")))
        #expect(single.polys[1].rows == (try ms.rows("c1CoeffBeforeTruncation")))
        let expected = try ms.hex("proto")
        #expect(try ProtoSerializedCiphertext(single.serialize(forDecryption: true)).deterministicBytes() == expected)
        let parsed = try Ciphertext(deserialize: try ProtoSerializedCiphertext(serializedBytes: expected).native(),
                                    context: f.context, moduliCount: 1, format: .coeff)
        #expect(try f.context.decrypt(parsed, secretKey: f.secretKey).values == (try ms.uints("decrypted")))
        print("checked \(file): modulus switching")
    }

    @Test("evaluation key: parse, key relation, applyGalois byte-exact, square + relinearize",
          arguments: Conformance.heVectorNames)
    func evaluationKey(file: String) throws {
        let f = try Fixture(file)
        guard f.vector.has("evaluationKey") else { return }
        let ek = try f.vector.sub("evaluationKey")
        let keyBytes = try ek.hex("proto")
        let proto = try ProtoEvaluationKey(serializedBytes: keyBytes)
        let serialized = try proto.native()
        let key = try EvaluationKey(deserialize: serialized, context: f.context)
        #expect(key.galoisKeys.keys.sorted() == (try ek.uints("galoisElements").map { Int($0) }.sorted()))
        #expect(key.relinearizationKey != nil)
        // Re-serialization gives the same content (map order is not defined on the wire).
        #expect(key.serialize() == serialized)
        let reparsed = try ProtoEvaluationKey(serializedBytes: try ProtoEvaluationKey(key.serialize()).deterministicBytes())
        #expect(reparsed == proto)
        // Every key-switching key encrypts p·s' in row j only, under s, with a small error.
        for (g, ksk) in key.galoisKeys {
            try KeyRelation.check(ksk, target: try Galois.apply(f.secretKey.poly, element: g), secretKey: f.secretKey)
        }
        if let rk = key.relinearizationKey {
            var square = f.secretKey.poly
            try square.multiplyPointwise(f.secretKey.poly)
            try KeyRelation.check(rk, target: square, secretKey: f.secretKey)
        }
        for ag in try ek.subs("applyGalois") {
            let g = try ag.int("element")
            let out = try f.context.applyGalois(f.seeded, element: g, key: key)
            #expect(try ProtoSerializedCiphertext(out.serialize()).deterministicBytes() == (try ag.hex("outputProto")),
                    "applyGalois \(g) bytes")
            #expect(try f.context.decrypt(out, secretKey: f.secretKey).values == (try ag.uints("decrypted")))
        }
        let sq = try ek.sub("square")
        let product = try f.context.multiplyAndRelinearize(f.seeded, f.seeded, key: key)
        let result = try f.context.decryptWithNoiseBudget(product, secretKey: f.secretKey)
        #expect(result.plaintext.values == (try sq.uints("decrypted")))
        #expect(result.noiseBudget > 0)
        print("checked \(file): evaluation key, applyGalois \(try ek.subs("applyGalois").map { try $0.int("element") }), "
            + "square budget \(result.noiseBudget) (reference \(try sq.double("noiseBudget")))")
    }
}

/// Checks SPEC-HE §6.2 on a key: for every row r, `invNTT(K_j.c0 + K_j.a·s)[r]` minus `p·s'` in row j is the same
/// small polynomial in every row.
enum KeyRelation {
    static func check(_ key: KeySwitchKey, target: PolyRq, secretKey: SecretKey) throws {
        let ctx = secretKey.context.keyContext
        let n = ctx.degree
        let p = ctx.moduli[ctx.rowCount - 1].value
        let targetCoeff = target.converted(to: .coeff)
        for (j, ct) in key.ciphertexts.enumerated() {
            var x = ct.polys[1]
            try x.multiplyPointwise(secretKey.poly)
            try x.add(ct.polys[0])
            x.inverseNTT()
            var first: [Int64] = []
            for (r, q) in ctx.moduli.enumerated() {
                var row: [Int64] = []
                for i in 0..<n {
                    var v = x.data[r * n + i]
                    if r == j { v = q.subtract(v, q.multiply(q.reduce(p), targetCoeff.data[r * n + i])) }
                    row.append(q.centered(v))
                }
                if r == 0 { first = row } else { #expect(row == first, "key \(j) row \(r) differs") }
            }
            #expect(first.allSatisfy { abs($0) <= 21 }, "key \(j) error not small")
        }
    }
}
