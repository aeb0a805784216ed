import ConformanceSupport
import BFV
import CKernels
import Testing

extension KernelTests {
    /// Moduli for the key-parse kernels: the preset's three, a 30-bit prime, small primes above and below the vector
    /// path's lower bound (2^14), and 2.
    static let parseModuli: [UInt64] = [134_176_769, 268_369_921, 268_361_729, 1_073_479_681, 40961, 12289, 7681, 2]

    @Test("16-byte draws reduce to the engine's residues at every level, including all-ones and all-zero draws")
    func reduceWide() throws {
        var rng = TestRandom()
        let count = 1037  // eight-value groups and a tail
        let random = (0..<(16 * count)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        for value in Self.parseModuli {
            let q = try Modulus(value)
            var draws = random
            for i in 0..<16 { draws[i] = 0xFF; draws[16 + i] = 0 }
            for i in 8..<16 { draws[32 + i] = 0xFF }  // the high word all ones, the low word random
            // Every other draw from 64 on with its 32-bit words' sum, as the kernels fold it (Σ l_k·(2^32k mod q)),
            // one below or at a large multiple of q: where an estimated quotient is off by one.
            let c1 = (UInt64(1) << 32) % value, c2 = c1 * c1 % value, c3 = c2 * c1 % value
            for i in stride(from: 4, to: count, by: 2) {
                let (l1, l2, l3) = (UInt64.random(in: 0...UInt64(UInt32.max), using: &rng),
                                    UInt64.random(in: 0...UInt64(UInt32.max), using: &rng),
                                    UInt64.random(in: 0...UInt64(UInt32.max), using: &rng))
                let partial = l1 * c1 + l2 * c2 + l3 * c3
                let target = i % 4 == 0 ? value - 1 : 0
                let l0 = (target + value - partial % value) % value
                let lo = l0 | (l1 << 32), hi = l2 | (l3 << 32)
                withUnsafeBytes(of: (lo.littleEndian, hi.littleEndian)) { for k in 0..<16 { draws[16 * i + k] = $0[k] } }
            }
            let expected = (0..<count).map { i in
                draws.withUnsafeBytes { raw in
                    UInt32(q.reduce(high: raw.loadUnaligned(fromByteOffset: 16 * i + 8, as: UInt64.self),
                                    low: raw.loadUnaligned(fromByteOffset: 16 * i, as: UInt64.self)))
                }
            }
            let results = Self.atEveryLevel { () -> [UInt32] in
                var out = [UInt32](repeating: 0, count: count)
                cv_reduce_wide32(draws, count, UInt32(value), &out)
                return out
            }
            for result in results { #expect(result == expected, "q = \(value)") }
        }
    }

    @Test("rows of 1 to 30 bits unpack to the engine's values at every level, and the first value out of range is found")
    func unpack() throws {
        var rng = TestRandom()
        for width in 1...30 {
            for count in [1, 7, 8, 9, 64, 1000] {
                // A modulus of this width below 2^width, so that a value out of range can be written.
                let top: UInt64 = 1 << width
                let q = width == 1 ? 2 : UInt64.random(in: (top / 2 + 1)..<top, using: &rng)
                var values = (0..<count).map { _ in UInt64.random(in: 0..<q, using: &rng) }
                // `values` packed as the reference does, then unpacked at every level: the words and the count returned.
                func unpacked() -> [([UInt32], Int)] {
                    var packed: [UInt8] = []
                    values.withUnsafeBufferPointer { CoefficientPacking.pack($0, bits: width, into: &packed) }
                    return Self.atEveryLevel {
                        var out = [UInt32](repeating: 0, count: count)
                        let n = cv_unpack32(packed, packed.count, count, UInt32(width), UInt32(q), &out)
                        return (out, n)
                    }
                }
                for (out, n) in unpacked() {
                    #expect(n == count && out.map(UInt64.init) == values, "width \(width), \(count) values")
                }
                guard q < top else { continue }  // 2 at one bit: every value is in range
                let bad = Int.random(in: 0..<count, using: &rng)
                values[bad] = UInt64.random(in: q..<top, using: &rng)
                let found = unpacked()
                for (out, n) in found {
                    #expect(n == bad, "width \(width), \(count) values, out of range at \(bad)")
                    #expect(out.prefix(bad).map(UInt64.init) == Array(values.prefix(bad)))
                }
            }
        }
    }

    @Test("a key value out of range in the middle of a row is named by the compute-form parse at every level")
    func keyValueOutOfRange() throws {
        let context = try Context(preset: .n_4096_logq_27_28_28_logt_5)
        let key = try EvaluationKey(config: EvaluationKeyConfig(galoisElements: [4097], hasRelinearizationKey: false),
                                    secretKey: SecretKey(context: context))
        let good = key.serialize()
        #expect(Self.atEveryLevel { try? EvaluationKey(deserializeComputeForm: good, context: context) }
            .allSatisfy { $0 == key.computeForm() })
        guard let (element, cts) = good.galoisKeys.first, case let .seeded(poly0, seed) = cts[0] else {
            Issue.record("no seeded Galois key"); return
        }
        // Row 1 (28 bits, q1 = 268369921) value 1001: all ones, 2^28 − 1 ≥ q1. Row 0 takes 4096·27 bits.
        let row1 = (4096 * 27 + 7) / 8
        var values = [UInt64](repeating: 0, count: 4096)
        try poly0.withUnsafeBytes { raw in
            try values.withUnsafeMutableBufferPointer { out in
                try CoefficientPacking.unpack(UnsafeRawBufferPointer(rebasing: raw[row1..<(row1 + 4096 * 28 / 8)]),
                                              count: 4096, bits: 28, into: out, modulus: nil)
            }
        }
        values[1001] = (1 << 28) - 1
        var rowBytes: [UInt8] = []
        values.withUnsafeBufferPointer { CoefficientPacking.pack($0, bits: 28, into: &rowBytes) }
        let bad = Array(poly0[..<row1]) + rowBytes + Array(poly0[(row1 + rowBytes.count)...])
        let serialized = SerializedEvaluationKey(galoisKeys: [(element, [.seeded(poly0: bad, seed: seed)] + cts.dropFirst())],
                                                 relinearizationKey: nil)
        _ = Self.atEveryLevel {
            #expect(throws: HEError.coefficientOutOfRange(row: 1, index: 1001, value: (1 << 28) - 1, modulus: 268_369_921)) {
                try EvaluationKey(deserializeComputeForm: serialized, context: context)
            }
        }
    }
}
