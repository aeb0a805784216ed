import ConformanceSupport
import BFV
import Testing

/// Truncated, oversized and corrupted ciphertexts and keys must throw typed errors, never trap.
@Suite("Malformed serialized input")
struct MalformedInputTests {
    static let context: Context = {
        // The Live Caller ID preset; its constants are fixed and valid, so building it cannot fail.
        guard let c = try? Context(preset: .n_4096_logq_27_28_28_logt_5) else { preconditionFailure("preset context") }
        return c
    }()

    static func fresh() throws -> (Ciphertext, SecretKey) {
        let sk = SecretKey(context: context)
        let ct = try context.encrypt(context.encodeCoefficients([1, 2, 3]), secretKey: sk)
        return (ct, sk)
    }

    func parse(_ s: SerializedCiphertext, moduli: Int = 2, format: PolyFormat = .coeff) throws -> Ciphertext {
        try Ciphertext(deserialize: s, context: Self.context, moduliCount: moduli, format: format)
    }

    @Test("seeded ciphertext: every truncation and extension of poly0 throws")
    func seededLengths() throws {
        let (ct, _) = try Self.fresh()
        guard case let .seeded(poly0, seed) = ct.serialize() else { Issue.record("not seeded"); return }
        #expect(poly0.count == 28160)
        for cut in [0, 1, 100, 13823, 13824, 28159] {
            #expect(throws: HEError.self) { try parse(.seeded(poly0: Array(poly0.prefix(cut)), seed: seed)) }
        }
        #expect(throws: HEError.self) { try parse(.seeded(poly0: poly0 + [0], seed: seed)) }
        for seedLength in [0, 16, 31, 33, 64] {
            #expect(throws: HEError.invalidSeedLength(seedLength)) {
                try parse(.seeded(poly0: poly0, seed: [UInt8](repeating: 7, count: seedLength)))
            }
        }
        // Wrong moduli count for the bytes.
        #expect(throws: HEError.self) { try parse(.seeded(poly0: poly0, seed: seed), moduli: 1) }
        #expect(throws: HEError.self) { try parse(.seeded(poly0: poly0, seed: seed), moduli: 3) }
        #expect(throws: HEError.self) { try parse(.seeded(poly0: poly0, seed: seed), moduli: 0) }
    }

    @Test("coefficients not below their modulus are rejected")
    func outOfRange() throws {
        let (ct, _) = try Self.fresh()
        guard case let .seeded(poly0, seed) = ct.serialize() else { Issue.record("not seeded"); return }
        var bad = poly0
        // The first 27 bits all ones: 2^27 − 1 ≥ q0 = 134176769.
        bad[0] = 0xFF; bad[1] = 0xFF; bad[2] = 0xFF; bad[3] |= 0xE0
        #expect(throws: HEError.coefficientOutOfRange(row: 0, index: 0, value: (1 << 27) - 1, modulus: 134_176_769)) {
            try parse(.seeded(poly0: bad, seed: seed))
        }
    }

    @Test("full ciphertext: counts, skips, correction factor, lengths")
    func fullFraming() throws {
        var (ct, _) = try Self.fresh()
        ct.seed = nil
        guard case let .full(blob, skips, cf) = ct.serialize() else { Issue.record("not full"); return }
        #expect(try parse(.full(polys: blob, skipLSBs: skips, correctionFactor: cf)) == ct)
        #expect(try parse(.full(polys: blob, skipLSBs: [], correctionFactor: cf)) == ct)
        for cut in [0, 1, 2, 3, blob.count / 2, blob.count - 1] {
            #expect(throws: HEError.self) { try parse(.full(polys: Array(blob.prefix(cut)), skipLSBs: skips, correctionFactor: cf)) }
        }
        #expect(throws: HEError.self) { try parse(.full(polys: blob + [0, 0], skipLSBs: skips, correctionFactor: cf)) }
        for count in [0, 1, 4, 0xFFFF] {
            var b = blob
            b[0] = UInt8(count & 0xFF); b[1] = UInt8(count >> 8)
            #expect(throws: HEError.self) { try parse(.full(polys: b, skipLSBs: [], correctionFactor: cf)) }
        }
        #expect(throws: HEError.self) { try parse(.full(polys: blob, skipLSBs: [0], correctionFactor: cf)) }
        #expect(throws: HEError.self) { try parse(.full(polys: blob, skipLSBs: [0, 0, 0], correctionFactor: cf)) }
        #expect(throws: HEError.self) { try parse(.full(polys: blob, skipLSBs: [27, 0], correctionFactor: cf)) }
        #expect(throws: HEError.self) { try parse(.full(polys: blob, skipLSBs: [UInt32.max, 0], correctionFactor: cf)) }
        #expect(throws: HEError.self) { try parse(.full(polys: blob, skipLSBs: skips, correctionFactor: 0)) }
        #expect(throws: HEError.self) { try parse(.full(polys: blob, skipLSBs: skips, correctionFactor: 17)) }
        #expect(throws: HEError.self) { try parse(.full(polys: blob, skipLSBs: skips, correctionFactor: .max)) }
    }

    @Test("random corruption never traps")
    func randomCorruption() throws {
        var rng = TestRandom()
        var (ct, _) = try Self.fresh()
        let seeded = ct.serialize()
        ct.seed = nil
        let full = ct.serialize()
        var outcomes = (parsed: 0, rejected: 0)
        for _ in 0..<200 {
            for original in [seeded, full] {
                var mutated = original
                switch original {
                case var .seeded(poly0, seed):
                    for _ in 0..<Int.random(in: 1...8, using: &rng) {
                        poly0[Int.random(in: 0..<poly0.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                    }
                    if Bool.random(using: &rng) { poly0.removeLast(Int.random(in: 0...poly0.count, using: &rng)) }
                    if Bool.random(using: &rng) { seed = Array(seed.prefix(Int.random(in: 0...40, using: &rng))) }
                    mutated = .seeded(poly0: poly0, seed: seed)
                case var .full(blob, skips, cf):
                    for _ in 0..<Int.random(in: 1...8, using: &rng) {
                        blob[Int.random(in: 0..<blob.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                    }
                    if Bool.random(using: &rng) { blob.removeLast(Int.random(in: 0...blob.count, using: &rng)) }
                    if Bool.random(using: &rng) { skips = (0..<Int.random(in: 0...3, using: &rng)).map { _ in UInt32.random(in: 0...40, using: &rng) } }
                    if Bool.random(using: &rng) { cf = UInt64.random(in: 0...20, using: &rng) }
                    mutated = .full(polys: blob, skipLSBs: skips, correctionFactor: cf)
                }
                do {
                    _ = try parse(mutated)
                    outcomes.parsed += 1
                } catch is HEError {
                    outcomes.rejected += 1
                }
            }
        }
        #expect(outcomes.parsed + outcomes.rejected == 400)
        #expect(outcomes.rejected > 0)
    }

    @Test("evaluation keys: wrong counts, elements, lengths, seeds and values throw, in full and in the compute form")
    func evaluationKeys() throws {
        let sk = SecretKey(context: Self.context)
        let key = try EvaluationKey(config: EvaluationKeyConfig(galoisElements: [4097], hasRelinearizationKey: true),
                                    secretKey: sk)
        let good = key.serialize()
        #expect(try EvaluationKey(deserialize: good, context: Self.context) == key)
        #expect(try EvaluationKey(deserializeComputeForm: good, context: Self.context) == key.computeForm())
        guard let (element, cts) = good.galoisKeys.first else { Issue.record("no Galois key"); return }
        func attempt(_ galois: [(element: UInt64, key: [SerializedCiphertext])], _ relin: [SerializedCiphertext]?) {
            let serialized = SerializedEvaluationKey(galoisKeys: galois, relinearizationKey: relin)
            #expect(throws: HEError.self) { try EvaluationKey(deserialize: serialized, context: Self.context) }
            #expect(throws: HEError.self) { try EvaluationKey(deserializeComputeForm: serialized, context: Self.context) }
        }
        for bad: UInt64 in [0, 1, 2, 4096, 8192, 8193, .max] { attempt([(bad, cts)], nil) }
        attempt([(element, Array(cts.prefix(1)))], nil)
        attempt([(element, cts + cts.prefix(1))], nil)
        attempt([(element, [])], nil)
        if case let .seeded(poly0, seed) = cts[0] {
            attempt([(element, [.seeded(poly0: Array(poly0.dropLast()), seed: seed), cts[1]])], nil)
            attempt([(element, [.seeded(poly0: poly0, seed: Array(seed.prefix(16))), cts[1]])], nil)
            // A query-sized poly0 (ciphertext moduli only) is not a key ciphertext.
            attempt([(element, [.seeded(poly0: Array(poly0.prefix(28160)), seed: seed), cts[1]])], nil)
            // A first value at or above its modulus (all ones in its 27 bits).
            attempt([(element, [.seeded(poly0: [0xFF, 0xFF, 0xFF, 0xFF] + poly0.dropFirst(4), seed: seed), cts[1]])], nil)
        } else {
            Issue.record("key ciphertexts are not seeded")
        }
        attempt([], Array(good.relinearizationKey?.prefix(1) ?? []))
    }

    @Test("secret keys: wrong count and lengths throw")
    func secretKeys() throws {
        let sk = SecretKey(context: Self.context)
        let bytes = sk.serialize()
        #expect(throws: HEError.self) { try SecretKey(deserialize: [], context: Self.context) }
        #expect(throws: HEError.self) { try SecretKey(deserialize: [2, 0] + bytes.dropFirst(2), context: Self.context) }
        #expect(throws: HEError.self) { try SecretKey(deserialize: Array(bytes.dropLast()), context: Self.context) }
        #expect(throws: HEError.self) { try SecretKey(deserialize: bytes + [0], context: Self.context) }
    }
}
