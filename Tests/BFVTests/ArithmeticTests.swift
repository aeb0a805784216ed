@testable import BFV
import ConformanceSupport
import Testing

/// Word arithmetic, NTT and bit packing against simple reference computations, with random inputs.
@Suite("Modular arithmetic, NTT and packing")
struct ArithmeticTests {
    static let moduli: [UInt64] = [3, 17, 65537, 134_176_769, 268_361_729, 36_028_797_018_652_673,
                                   1_152_921_504_606_830_593, (1 << 62) - 57, 1 << 40]

    @Test("Barrett, Shoup, add, subtract and inverse agree with 128-bit arithmetic", arguments: moduli)
    func modulus(value: UInt64) throws {
        var rng = TestRandom()
        let q = try Modulus(value)
        for _ in 0..<2000 {
            let a = UInt64.random(in: 0..<value, using: &rng)
            let b = UInt64.random(in: 0..<value, using: &rng)
            let x = UInt64.random(in: 0...UInt64.max, using: &rng)
            let wide = UInt128.random(in: 0...UInt128.max, using: &rng)
            #expect(q.multiply(a, b) == UInt64((UInt128(a) * UInt128(b)) % UInt128(value)))
            #expect(q.reduce(x) == x % value)
            #expect(q.reduce(wide) == UInt64(wide % UInt128(value)))
            #expect(q.multiplyShoup(x, b, q.shoup(b)) == UInt64((UInt128(x) * UInt128(b)) % UInt128(value)))
            #expect(q.add(a, b) == (a + b) % value || q.add(a, b) == UInt64((UInt128(a) + UInt128(b)) % UInt128(value)))
            #expect(q.subtract(a, b) == UInt64((UInt128(a) + UInt128(value) - UInt128(b)) % UInt128(value)))
        }
        if value & 1 == 1, value > 2 {
            let a = UInt64.random(in: 1..<value, using: &rng)
            if let inv = try? q.inverse(a) { #expect(q.multiply(a, inv) == 1) }
        }
        #expect(throws: HEError.self) { try Modulus(0) }
        #expect(throws: HEError.self) { try Modulus(1 << 62) }
    }

    @Test("NTT matches the definition and inverts", arguments: [(8, UInt64(131_249)), (16, UInt64(65537)), (64, UInt64(134_176_769))])
    func ntt(degree: Int, modulus: UInt64) throws {
        var rng = TestRandom()
        let ctx = try PolyContext(degree: degree, moduli: [modulus])
        let q = ctx.moduli[0]
        let psi = try #require(ctx.ntt[0]).root
        let a = (0..<degree).map { _ in UInt64.random(in: 0..<modulus, using: &rng) }
        let poly = try PolyRq(context: ctx, format: .coeff, data: a)
        let eval = poly.converted(to: .eval)
        let logN = degree.trailingZeroBitCount
        for i in 0..<degree {
            let point = q.pow(psi, UInt64(2 * bitReverse(i, bits: logN) + 1))
            var acc: UInt64 = 0
            var power: UInt64 = 1
            for j in 0..<degree {
                acc = q.add(acc, q.multiply(a[j], power))
                power = q.multiply(power, point)
            }
            #expect(eval.data[i] == acc)
        }
        #expect(eval.converted(to: .coeff) == poly)
    }

    @Test("packing round-trips at every width and skip, rows of any length (the windowed reader's tail included)")
    func packing() throws {
        var rng = TestRandom()
        for bits in [4, 5, 17, 27, 28, 55, 56, 60] {
            for skip in [0, 1, 3] where skip < bits {
                for count in [64, 61, 1] {
                    let values = (0..<count).map { _ in UInt64.random(in: 0..<(UInt64(1) << UInt64(bits)), using: &rng) }
                    var bytes: [UInt8] = []
                    values.withUnsafeBufferPointer { CoefficientPacking.pack($0, bits: bits, skip: skip, into: &bytes) }
                    #expect(bytes.count == CoefficientPacking.rowByteCount(count: count, bits: bits, skip: skip))
                    var out = [UInt64](repeating: 0, count: count)
                    try bytes.withUnsafeBytes { raw in
                        try out.withUnsafeMutableBufferPointer {
                            try CoefficientPacking.unpack(raw, count: count, bits: bits, skip: skip, into: $0, modulus: nil)
                        }
                    }
                    #expect(out == values.map { ($0 >> UInt64(skip)) << UInt64(skip) }, "\(count) values of \(bits) bits, skip \(skip)")
                }
            }
        }
    }

    @Test("every preset builds and has the moduli and roots of SPEC-HE §1", arguments: ParameterPreset.allCases)
    func presets(preset: ParameterPreset) throws {
        let params = EncryptionParameters(preset)
        let validated = try EncryptionParameters(polyDegree: params.polyDegree, plaintextModulus: params.plaintextModulus,
                                                 coefficientModuli: params.coefficientModuli,
                                                 securityLevel: params.securityLevel)
        #expect(validated == params)
        let ctx = try Context(parameters: params)
        if preset.rawValue.contains("27_28_28") {
            #expect(ctx.keyContext.ntt.map { $0?.root } == [24149, 62736, 58939])
            #expect(ctx.keyContext.moduli.map(\.bitWidth) == [27, 28, 28])
        }
        if preset == .n_4096_logq_27_28_28_logt_5 { #expect(params.bytesPerPlaintext == 2048) }
    }

    @Test("invalid parameters are rejected")
    func invalidParameters() {
        #expect(throws: HEError.self) {
            try EncryptionParameters(polyDegree: 4096, plaintextModulus: 17, coefficientModuli: [134_176_769, 134_176_769],
                                     securityLevel: .unchecked)
        }
        #expect(throws: HEError.self) {
            try EncryptionParameters(polyDegree: 4000, plaintextModulus: 17, coefficientModuli: [134_176_769],
                                     securityLevel: .unchecked)
        }
        #expect(throws: HEError.self) {
            try EncryptionParameters(polyDegree: 4096, plaintextModulus: 17, coefficientModuli: [134_176_771],
                                     securityLevel: .unchecked)
        }
        // Too many bits for 128-bit security at N=4096.
        #expect(throws: HEError.self) {
            try EncryptionParameters(polyDegree: 4096, plaintextModulus: 17,
                                     coefficientModuli: [36_028_797_018_652_673, 36_028_797_017_571_329],
                                     securityLevel: .quantum128)
        }
    }
}
