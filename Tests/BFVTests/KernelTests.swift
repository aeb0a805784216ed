import ConformanceSupport
import BFV
import CKernels
import Testing

/// The C kernels against their portable forms and the Swift engine: the AVX-512 and portable paths must give the
/// same words, and the fused 32-bit Galois key switch must equal `Context.applyGalois`.
@Suite("CKernels: vector and portable paths agree", .serialized)
struct KernelTests {
    /// `b^e mod m` for m below 2^32 (inverses mod a prime as `b^(m−2)`).
    static func power(_ b: UInt64, _ e: UInt64, modulo m: UInt64) -> UInt64 {
        var (result, base, e) = (UInt64(1), b % m, e)
        while e > 0 {
            if e & 1 == 1 { result = result * base % m }
            base = base * base % m
            e >>= 1
        }
        return result
    }

    /// Runs `body` at each level this CPU offers, restoring the CPU's level afterwards.
    static func atEveryLevel<T>(_ body: () throws -> T) rethrows -> [T] {
        defer { _ = cv_set_level(CV_LEVEL_AVX512) }
        var results: [T] = []
        let levels = cv_cpu_level() == CV_LEVEL_AVX512 ? [CV_LEVEL_PORTABLE, CV_LEVEL_AVX512] : [CV_LEVEL_PORTABLE]
        for level in levels {
            _ = cv_set_level(level)
            results.append(try body())
        }
        return results
    }

    /// The Live Caller ID preset's context and 32-bit kernel, Galois keys for `elements(degree)` and a random
    /// ciphertext in coefficient form with its words.
    static func galoisFixture(_ elements: (Int) -> [Int]) throws
        -> (Context, NarrowKeySwitch, [Int], EvaluationKey, Ciphertext, [UInt32]) {
        let context = try Context(preset: .n_4096_logq_27_28_28_logt_5)
        let kernel = try #require(context.narrowKeySwitch)
        let secretKey = SecretKey(context: context)
        let galois = elements(context.degree)
        let key = try EvaluationKey(config: EvaluationKeyConfig(galoisElements: galois, hasRelinearizationKey: false),
                                    secretKey: secretKey)
        var rng = TestRandom()
        let values = (0..<context.degree).map { _ in UInt64.random(in: 0..<context.plaintextModulus.value, using: &rng) }
        let ct = try context.encrypt(context.encodeCoefficients(values), secretKey: secretKey).converted(to: .coeff)
        return (context, kernel, galois, key, ct, ct.polys.flatMap { $0.data.map { UInt32($0) } })
    }

    @Test("32-bit NTT: forward and inverse at every level, round trip", arguments: [
        ParameterPreset.n_4096_logq_27_28_28_logt_5, .n_4096_logq_27_28_28_logt_16, .insecure_n_8_logq_5x18_logt_5,
    ])
    func ntt(preset: ParameterPreset) throws {
        let context = try Context(preset: preset)
        let ctx = context.keyContext
        var rng = TestRandom()
        let data = ctx.moduli.flatMap { q in (0..<context.degree).map { _ in UInt64.random(in: 0..<q.value, using: &rng) } }
        let poly = try PolyRq(context: ctx, format: .coeff, data: data)
        let results = Self.atEveryLevel { () -> ([UInt64], [UInt64]) in
            let eval = poly.converted(to: .eval)
            return (eval.data, eval.converted(to: .coeff).data)
        }
        for (eval, back) in results {
            #expect(eval == results[0].0)
            #expect(back == data)
        }
        #expect(results[0].0 != data)
    }

    /// The vector transforms reduce lazily on a schedule set by the modulus's width (one stage in four below 2^28,
    /// every stage at 30 bits) and run their register stages over two or eight blocks by size: every width and
    /// size must give the portable path's words, in place and out of place. Any twiddles do for that (both paths
    /// compute the same network).
    @Test("32-bit NTT: vector and portable agree for every modulus width and size", arguments: [
        UInt32(1_073_479_681), 536_813_569, 268_369_921, 134_176_769, 65_537, 12_289,
    ])
    func nttWidths(q: UInt32) throws {
        var rng = TestRandom()
        for n in [64, 128, 256, 512, 4096, 8192] {
            let w = (0..<n).map { _ in UInt32.random(in: 0..<q, using: &rng) }
            let ws = w.map { UInt32((UInt64($0) << 32) / UInt64(q)) }
            let input = (0..<n).map { _ in UInt32.random(in: 0..<(4 * q), using: &rng) }
            let invN = UInt32.random(in: 1..<q, using: &rng)
            let invNShoup = UInt32((UInt64(invN) << 32) / UInt64(q))
            let results = Self.atEveryLevel { () -> ([UInt32], [UInt32]) in
                var forward = input
                cv_ntt32_forward(&forward, n, w, ws, q)
                let inverseInput = input.map { $0 % (2 * q) }
                var inverse = inverseInput
                cv_ntt32_inverse(&inverse, n, w, ws, q, invN, invNShoup)
                // Out of place: the same words, the source untouched.
                var forwardTo = [UInt32](repeating: 0, count: n)
                var inverseTo = [UInt32](repeating: 0, count: n)
                let (source, inverseSource) = (input, inverseInput)
                cv_ntt32_forward_to(&forwardTo, source, n, w, ws, q)
                cv_ntt32_inverse_to(&inverseTo, inverseSource, n, w, ws, q, invN, invNShoup)
                #expect(forwardTo == forward && inverseTo == inverse, "out of place, q \(q), n \(n)")
                #expect(source == input && inverseSource == inverseInput)
                return (forward, inverse)
            }
            for (forward, inverse) in results {
                #expect(forward == results[0].0, "forward, q \(q), n \(n)")
                #expect(inverse == results[0].1, "inverse, q \(q), n \(n)")
                #expect(forward.allSatisfy { $0 < q } && inverse.allSatisfy { $0 < q })
            }
        }
    }

    @Test("32-bit NTT on lazy inputs: forward below 4q and inverse below 2q give the reduced transforms")
    func lazyInputs() throws {
        let context = try Context(preset: .n_4096_logq_27_28_28_logt_5)
        let kernel = try #require(context.narrowKeySwitch)
        let n = context.degree
        var rng = TestRandom()
        let reduced = (0..<kernel.ciphertextWords).map { i in UInt32.random(in: 0..<kernel.moduli[(i / n) % kernel.rows], using: &rng) }
        func lazy(_ words: [UInt32], multiples: ClosedRange<UInt32>) -> [UInt32] {
            words.indices.map { i in words[i] + kernel.moduli[(i / n) % kernel.rows] * UInt32.random(in: multiples, using: &rng) }
        }
        let results = try Self.atEveryLevel { () -> Bool in
            var forward = reduced
            var forwardLazy = lazy(reduced, multiples: 0...3)
            forward.withUnsafeMutableBufferPointer { kernel.forwardNTT($0.baseAddress!) }
            forwardLazy.withUnsafeMutableBufferPointer { kernel.forwardNTT($0.baseAddress!) }
            var inverse = forward
            var inverseLazy = lazy(forward, multiples: 0...1)
            inverse.withUnsafeMutableBufferPointer { kernel.inverseNTT($0.baseAddress!) }
            inverseLazy.withUnsafeMutableBufferPointer { kernel.inverseNTT($0.baseAddress!) }
            try #require(forward != reduced)
            return forward == forwardLazy && inverse == reduced && inverseLazy == reduced
        }
        #expect(results.allSatisfy { $0 })
    }

    @Test("fused Galois key switch equals applyGalois, at every level")
    func galoisKeySwitch() throws {
        let (context, kernel, elements, key, ct, input) = try Self.galoisFixture { n in [n + 1, n / 2 + 1, 3] }
        for g in elements {
            let expected = try context.applyGalois(ct, element: g, key: key).converted(to: .coeff)
            let expectedWords = expected.polys.flatMap { $0.data.map { UInt32($0) } }
            let ksk = try #require(key.galoisKeys[g])
            let outputs = try Self.atEveryLevel { () -> [UInt32] in
                var out = [UInt32](repeating: 0, count: kernel.ciphertextWords)
                try input.withUnsafeBufferPointer { src in
                    try out.withUnsafeMutableBufferPointer { dst in
                        try kernel.applyGalois(dst.baseAddress!, src.baseAddress!, element: g, key: ksk,
                                               scratch: kernel.makeScratch())
                    }
                }
                return out
            }
            for out in outputs { #expect(out == expectedWords, "element \(g)") }
        }
    }

    @Test("digit products at their bound (every key residue m − 1, diagonal digits q − 1): every level gives the same words")
    func digitProductsAtTheBound() throws {
        let context = try Context(preset: .n_4096_logq_27_28_28_logt_5)
        let kernel = try #require(context.narrowKeySwitch)
        let n = context.degree
        let keyContext = context.keyContext
        let largest = try PolyRq(context: keyContext, format: .eval,
                                 data: keyContext.moduli.flatMap { [UInt64](repeating: $0.value - 1, count: n) })
        let ksk = try KeySwitchKey(ciphertexts: (0..<kernel.rows).map { _ in
            try Ciphertext(context: context, polys: [largest, largest])
        })
        // In evaluation form the digit of row k at modulus k is σ(c1)'s row k as it is: all q_k − 1 here, so those
        // products are (m − 1)², the largest the 64-bit sums and their reduction see.
        let input = kernel.moduli.flatMap { [UInt32](repeating: $0 - 1, count: n) } + kernel.moduli.flatMap { [UInt32](repeating: $0 - 1, count: n) }
        let outputs = try Self.atEveryLevel { () -> [UInt32] in
            var out = [UInt32](repeating: 0, count: kernel.ciphertextWords)
            try input.withUnsafeBufferPointer { src in
                try out.withUnsafeMutableBufferPointer { dst in
                    try kernel.applyGaloisEvaluation(dst.baseAddress!, src.baseAddress!, element: n + 1, key: ksk,
                                                     scratch: kernel.makeScratch())
                }
            }
            return out
        }
        for out in outputs { #expect(out == outputs[0]) }
        #expect(outputs[0].contains { $0 != 0 })
    }

    @Test("relinearization on 32-bit words equals Context.relinearize, at every level")
    func relinearization() throws {
        let context = try Context(preset: .n_4096_logq_27_28_28_logt_5)
        let kernel = try #require(context.narrowKeySwitch)
        let secretKey = SecretKey(context: context)
        let key = try EvaluationKey(config: EvaluationKeyConfig(galoisElements: [], hasRelinearizationKey: true),
                                    secretKey: secretKey)
        var rng = TestRandom()
        let t = context.plaintextModulus.value
        let a = (0..<context.degree).map { _ in UInt64.random(in: 0..<t, using: &rng) }
        let b = (0..<context.degree).map { _ in UInt64.random(in: 0..<t, using: &rng) }
        let x = try context.encrypt(context.encodeCoefficients(a), secretKey: secretKey)
        let y = try context.encrypt(context.encodeCoefficients(b), secretKey: secretKey)
        let product = try context.multiplyAccumulate([(x, y)])
        let expected = try context.relinearize(product, key: key)
        let results = try Self.atEveryLevel {
            try kernel.relinearize(product, key: key, context: context, scratch: kernel.makeScratch())
        }
        for r in results { #expect(r == expected) }
        // And it decrypts to the product (a negacyclic convolution mod t).
        var expectedProduct = [UInt64](repeating: 0, count: context.degree)
        for i in 0..<context.degree where a[i] != 0 {
            for j in 0..<context.degree {
                let k = i + j
                let v = a[i] * b[j] % t
                if k < context.degree {
                    expectedProduct[k] = (expectedProduct[k] + v) % t
                } else {
                    expectedProduct[k - context.degree] = (expectedProduct[k - context.degree] + t - v) % t
                }
            }
        }
        #expect(try context.decrypt(results[0], secretKey: secretKey).values == expectedProduct)
    }

    @Test("evaluation-form key switch and split equal the coefficient-form ones transformed, at every level")
    func galoisKeySwitchEvaluation() throws {
        let (context, kernel, elements, key, _, input) = try Self.galoisFixture { n in [n + 1, n / 2 + 1, 17, 3] }
        #expect(kernel.evaluationFormExpansion)
        let n = context.degree
        func transformed(_ words: [UInt32]) -> [UInt32] {
            var w = words
            w.withUnsafeMutableBufferPointer { kernel.forwardNTT($0.baseAddress!) }
            return w
        }
        let inputEval = transformed(input)
        for g in elements {
            let ksk = try #require(key.galoisKeys[g])
            let results = try Self.atEveryLevel { () -> ([UInt32], [UInt32]) in
                var coeff = [UInt32](repeating: 0, count: kernel.ciphertextWords)
                var eval = [UInt32](repeating: 0, count: kernel.ciphertextWords)
                try input.withUnsafeBufferPointer { src in
                    try coeff.withUnsafeMutableBufferPointer { dst in
                        try kernel.applyGalois(dst.baseAddress!, src.baseAddress!, element: g, key: ksk,
                                               scratch: kernel.makeScratch())
                    }
                }
                try inputEval.withUnsafeBufferPointer { src in
                    try eval.withUnsafeMutableBufferPointer { dst in
                        try kernel.applyGaloisEvaluation(dst.baseAddress!, src.baseAddress!, element: g, key: ksk,
                                                         scratch: kernel.makeScratch())
                    }
                }
                return (transformed(coeff), eval)
            }
            for (expected, eval) in results {
                #expect(eval == expected, "element \(g)")
                #expect(eval == results[0].1, "element \(g): levels differ")
            }
        }
        // The split: even = c + r, odd = (c − r)·x^{−shift}, in both forms.
        let other = transformed(input.reversed().map { $0 % kernel.moduli[0] })
        let otherCoeff = input.reversed().map { $0 % kernel.moduli[0] }
        for shift in [1, 2, 64, n / 2] {
            let outputs = try Self.atEveryLevel { () -> Bool in
                var even = [UInt32](repeating: 0, count: kernel.ciphertextWords), odd = even
                kernel.combine(even: &even, odd: &odd, c: input, r: otherCoeff, shift: shift)
                // In place (the tree's inner splits) and into other buffers (its last split, into the leaves).
                var evenEval = inputEval, oddEval = other
                try evenEval.withUnsafeMutableBufferPointer { e in
                    try oddEval.withUnsafeMutableBufferPointer { o in
                        try kernel.combineEvaluation(even: e.baseAddress!, odd: o.baseAddress!, c: e.baseAddress!,
                                                     r: o.baseAddress!, shift: shift)
                    }
                }
                var evenOut = [UInt32](repeating: 0, count: kernel.ciphertextWords), oddOut = evenOut
                try kernel.combineEvaluation(even: &evenOut, odd: &oddOut, c: inputEval, r: other, shift: shift)
                return transformed(even) == evenEval && transformed(odd) == oddEval
                    && evenOut == evenEval && oddOut == oddEval
            }
            #expect(outputs.allSatisfy { $0 }, "shift \(shift)")
        }
    }

    @Test("ciphertext product sums on 32-bit words (extension, base conversion, tensor): every level gives the polynomial path's words")
    func productSums() throws {
        let context = try Context(preset: .n_4096_logq_27_28_28_logt_5)
        let secretKey = SecretKey(context: context)
        var rng = TestRandom()
        func ciphertext(_ format: PolyFormat) throws -> Ciphertext {
            let values = (0..<context.degree).map { _ in UInt64.random(in: 0..<context.plaintextModulus.value, using: &rng) }
            return try context.encrypt(context.encodeCoefficients(values), secretKey: secretKey).converted(to: format)
        }
        func words(_ ct: Ciphertext) -> ArraySlice<UInt32> { ct.polys.flatMap { $0.data.map { UInt32($0) } }[...] }
        // Three pairs, one operand of each in evaluation form (its Q rows read in place) and one in coefficient form.
        let cts = try (0..<3).map { _ in (try ciphertext(.eval), try ciphertext(.coeff)) }
        let pairs = cts.map { (a: words($0.0), aEval: true, b: words($0.1), bEval: false) }
        let outputs = try Self.atEveryLevel { () -> [[UInt64]] in
            try context.multiplyAccumulate(words: pairs).polys.map(\.data)
        }
        // The same sum through the polynomials' path, which extends every row of each operand.
        let expected = try context.multiplyAccumulate(cts).polys.map(\.data)
        #expect(outputs.count >= 1)
        for out in outputs { #expect(out == expected) }
    }

    /// The ciphertext-product tests' preset, its ciphertext moduli and their product Q.
    static func productPreset() throws -> (context: Context, q: [UInt64], bigQ: Int128) {
        let context = try Context(preset: .n_4096_logq_27_28_28_logt_5)
        let q = context.ciphertextContext.moduliValues
        return (context, q, q.reduce(Int128(1)) { $0 * Int128($1) })
    }

    /// The extension to Q ∪ P (`cv_extend32`, `cv_extend32_p`) against the exact centred lift computed here by CRT
    /// in 128-bit integers: for inputs in either form, given as polynomials (64-bit words) or as 32-bit words, at
    /// every level. An evaluation-form input's inverse transforms carry the conversion's first factor, so a
    /// wrong factor or correction α shows here rather than only in decryptions.
    @Test("extension to Q ∪ P equals the exact centred lift, every input kind, at every level")
    func extensionIsTheCentredLift() throws {
        let (context, q, bigQ) = try Self.productPreset()
        let ctx = context.ciphertextContext
        let n = context.degree
        var rng = TestRandom()
        let residues = q.flatMap { qi in (0..<n).map { _ in UInt64.random(in: 0..<qi, using: &rng) } }
        let coeff = PolyRq(unchecked: ctx, format: .coeff, data: residues)
        // x_j = Σ_i r_i·Q_i·[Q_i^{-1}]_{q_i} mod Q, centred into (−Q/2, Q/2].
        let crt = q.map { qi -> Int128 in
            let punctured = bigQ / Int128(qi)
            return punctured * Int128(Self.power(UInt64(punctured % Int128(qi)), qi - 2, modulo: qi))
        }
        let lift = (0..<n).map { j -> Int128 in
            let x = q.indices.reduce(Int128(0)) { ($0 + Int128(coeff.data[$1 * n + j]) * crt[$1]) % bigQ }
            return x > bigQ / 2 ? x - bigQ : x
        }
        let qRows = coeff.converted(to: .eval).data.map { UInt32($0) }
        for input in [coeff, coeff.converted(to: .eval)] {
            for asWords in [false, true] {
                let outputs = try Self.atEveryLevel { try context.narrowExtension(of: input, asWords: asWords) }
                for out in outputs {
                    guard let out else { Issue.record("no 32-bit extension for this preset"); continue }
                    let pData = out.auxiliaryModuli.flatMap { p in
                        lift.map { UInt64((($0 % Int128(p)) + Int128(p)) % Int128(p)) }
                    }
                    let pContext = try PolyContext(degree: n, moduli: out.auxiliaryModuli)
                    let pRows = PolyRq(unchecked: pContext, format: .coeff, data: pData).converted(to: .eval).data
                        .map { UInt32($0) }
                    #expect(out.words == qRows + pRows, "\(input.format) input, as words: \(asWords)")
                }
            }
        }
    }

    /// The auxiliary base's bound at its limit: every operand coefficient is A, within 2^−23 of the largest centred
    /// value Q/2 (at Q/2 itself the double-precision lift may pick either centred representative, both valid), and
    /// the sum has the most pairs allowed, so the tensor coefficients come as close to the bound P is sized for as
    /// inputs can. The exact result has a closed form: coefficient k of a⊗b is A²·(2k + 2 − N), so the scaled sum
    /// is round(t·m·count·(2k + 2 − N)·A²/Q) with m = 1, 2, 1 for the three polynomials.
    @Test("ciphertext product sums at the auxiliary base's limit (largest operands, most pairs) are exact")
    func productSumsAtTheBound() throws {
        let (context, q, bigQ) = try Self.productPreset()
        let n = context.degree
        let a = (bigQ - 1) / 2 - (Int128(1) << 32)
        let words = q.flatMap { qi in [UInt32](repeating: UInt32(a % Int128(qi)), count: n) }
        let operand = (words + words)[...]
        let count = 4096
        let pairs = Array(repeating: (a: operand, aEval: false, b: operand, bEval: false), count: count)
        let product = try context.multiplyAccumulate(words: pairs)
        let t = Int128(context.plaintextModulus.value)
        // A² = h·Q + l, so t·X/Q = K·h + K·l/Q with K = t·m·count·(2k + 2 − N); Q is odd, so no ties.
        let (h, l) = (a * a).quotientAndRemainder(dividingBy: bigQ)
        func floorDiv(_ x: Int128, _ y: Int128) -> Int128 { let d = x / y; return (x % y != 0 && (x < 0) != (y < 0)) ? d - 1 : d }
        for (poly, m) in [1, 2, 1].enumerated() {
            let data = product.polys[poly].converted(to: .coeff).data
            for k in [0, 1, n / 2 - 1, n / 2, n - 2, n - 1] {
                let kk = t * Int128(m * count * (2 * k + 2 - n))
                let y = kk * h + floorDiv(2 * kk * l + bigQ, 2 * bigQ)
                for (i, qi) in q.enumerated() {
                    let expected = ((y % Int128(qi)) + Int128(qi)) % Int128(qi)
                    #expect(Int128(data[i * n + k]) == expected, "poly \(poly), coefficient \(k), modulus \(i)")
                }
            }
        }
    }
}
