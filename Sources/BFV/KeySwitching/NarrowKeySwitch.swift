import CKernels

/// Galois automorphisms with key switching on 32-bit coefficient-form words, through the fused `CKernels` kernel:
/// the allocation-free path query expansion runs once per tree node. Available when every key modulus has at
/// most 30 bits (every Live Caller ID preset); results equal `Context.applyGalois` word for word.
public final class NarrowKeySwitch: @unchecked Sendable {
    /// Ring degree.
    public let degree: Int
    /// Ciphertext moduli (rows per polynomial).
    public let rows: Int
    /// The ciphertext moduli's values as 32-bit words.
    public let moduli: [UInt32]
    let keyRows: Int
    /// Gather tables of the expansion elements `2^k + 1` (see `cv_galois_table`).
    let galoisTables: [Int: [UInt32]]
    /// The same elements as permutations of the evaluation points (`cv_galois_keyswitch32_eval`); empty when the
    /// transforms of the moduli order their points differently (never for NTT-friendly primes).
    let evaluationPermutations: [Int: [UInt32]]
    /// Per shift `2^k < degree`: the evaluation form of `x^{−shift}` over the ciphertext moduli, then its Shoup
    /// quotients (2 · rows · degree words), for `combineEvaluation`.
    let monomials: [Int: [UInt32]]
    // Immutable after init; every pointer below is owned by this object and freed in deinit.
    private let storage: UnsafeMutableRawPointer
    private let params: UnsafeMutablePointer<cv_keyswitch_params>

    /// Prepares the constants for a context's key moduli (`ciphertextRows` of them plus the special modulus), or
    /// nil when a modulus is wider than 30 bits, the degree is below 32 or there is no special modulus.
    init?(keyContext key: PolyContext, ciphertextRows l: Int, constants: KeySwitchingConstants?) {
        guard let ks = constants, key.degree >= 32, l + 1 == key.rowCount, l <= Int(CV_MAX_KEYSWITCH_MODULI) else { return nil }
        var tables: [NTT32Tables] = []
        for row in 0..<key.rowCount {
            guard let t = key.ntt[row]?.narrow else { return nil }
            tables.append(t)
        }
        let n = key.degree
        degree = n
        rows = l
        keyRows = key.rowCount
        moduli = key.moduli.prefix(l).map { UInt32(truncatingIfNeeded: $0.value) }
        let m = l + 1
        // Layout: 4 twiddle tables of n words per modulus, then the small arrays.
        let wordCount = 4 * m * n + 3 * m + 3 * l + m
        let pointerCount = 4 * m
        let bytes = wordCount * 4 + m * 8 + pointerCount * 8 + 64
        storage = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        let words = storage.bindMemory(to: UInt32.self, capacity: wordCount)
        let barrett32 = (storage + wordCount * 4).alignedUp(for: UInt64.self).bindMemory(to: UInt64.self, capacity: m)
        let pointers = UnsafeMutableRawPointer(barrett32 + m).bindMemory(to: UnsafePointer<UInt32>?.self,
                                                                         capacity: pointerCount)
        tables.copyTwiddles(into: words, pointers: pointers, degree: n)
        let small = words + 4 * m * n
        let modulusWords = small, invN = small + m, invNShoup = small + 2 * m
        let pInv = small + 3 * m, pInvShoup = pInv + l, halfModQ = pInvShoup + l
        for (k, t) in tables.enumerated() {
            modulusWords[k] = t.q
            invN[k] = t.inverseDegree
            invNShoup[k] = t.inverseDegreeShoup
            barrett32[k] = (UInt64(1) << 32) / UInt64(t.q)
        }
        for i in 0..<l {
            let q = UInt64(modulusWords[i])
            pInv[i] = UInt32(truncatingIfNeeded: ks.specialInverse[i])
            pInvShoup[i] = UInt32(truncatingIfNeeded: (ks.specialInverse[i] << 32) / q)
            halfModQ[i] = UInt32(truncatingIfNeeded: ks.specialHalf[i])
        }
        var gathers: [Int: [UInt32]] = [:]
        var element = 3
        while element <= n + 1 {
            var table = [UInt32](repeating: 0, count: n)
            table.withUnsafeMutableBufferPointer { cv_galois_table($0.baseAddress, n, element) }
            gathers[element] = table
            element = 2 * element - 1
        }
        galoisTables = gathers
        let params = UnsafeMutablePointer<cv_keyswitch_params>.allocate(capacity: 1)
        params.initialize(to: cv_keyswitch_params(
            n: n, l: l, moduli: modulusWords,
            fwd: pointers, fwd_shoup: pointers + m, inv: pointers + 2 * m, inv_shoup: pointers + 3 * m,
            inv_n: invN, inv_n_shoup: invNShoup, barrett32: barrett32,
            p_inv: pInv, p_inv_shoup: pInvShoup, half_mod_q: halfModQ))
        self.params = params
        // x^e in evaluation form over row r's modulus, fully reduced.
        func transformed(power e: Int, row r: Int) -> [UInt32] {
            var words = [UInt32](repeating: 0, count: n)
            let q = modulusWords[r]
            words[e % n] = (e / n) % 2 == 0 ? 1 : q - 1
            words.withUnsafeMutableBufferPointer { cv_ntt32_forward($0.baseAddress, n, pointers[r], pointers[m + r], q) }
            return words
        }
        // σ_g maps the value at point ψ^e to the value at ψ^{g·e}: the transform of x^g lists each point's g-th
        // power, to be found among the points (the transform of x).
        var permutations: [Int: [UInt32]] = [:]
        let points = (0..<l).map { transformed(power: 1, row: $0) }
        let index = (0..<l).map { r in Dictionary(points[r].enumerated().map { ($1, UInt32($0)) }, uniquingKeysWith: { a, _ in a }) }
        for g in gathers.keys {
            let perRow = (0..<l).map { r in transformed(power: g, row: r).compactMap { index[r][$0] } }
            guard let first = perRow.first, first.count == n, perRow.allSatisfy({ $0 == first }) else {
                permutations = [:]
                break
            }
            permutations[g] = first
        }
        evaluationPermutations = index.allSatisfy({ $0.count == n }) ? permutations : [:]
        var monomialTables: [Int: [UInt32]] = [:]
        var shift = 1
        while shift < n {
            let rowsWords = (0..<l).flatMap { transformed(power: 2 * n - shift, row: $0) }
            let shoup = rowsWords.enumerated().map { i, w in
                UInt32(truncatingIfNeeded: (UInt64(w) << 32) / UInt64(modulusWords[i / n]))
            }
            monomialTables[shift] = rowsWords + shoup
            shift <<= 1
        }
        monomials = monomialTables
    }

    deinit {
        params.deallocate()
        storage.deallocate()
    }

    /// Words of one ciphertext: 2 polynomials × `rows` × `degree`.
    public var ciphertextWords: Int { 2 * rows * degree }

    /// Per-thread scratch for `applyGalois`.
    public final class Scratch {
        let words: UnsafeMutablePointer<UInt32>

        init(params: UnsafePointer<cv_keyswitch_params>) {
            words = .allocate(capacity: cv_keyswitch_scratch32(params))
        }

        deinit {
            words.deallocate()
        }
    }

    /// Fresh scratch buffers (one per thread).
    public func makeScratch() -> Scratch { Scratch(params: params) }

    /// `out = σ_g(input)` key-switched back to the secret key with `key`, both in coefficient form
    /// (`ciphertextWords` words, distinct buffers).
    public func applyGalois(_ out: UnsafeMutablePointer<UInt32>, _ input: UnsafePointer<UInt32>, element g: Int,
                            key: KeySwitchKey, scratch: Scratch) throws {
        guard let narrow = key.narrow, narrow.count == rows else {
            throw HEError.incompatibleOperands("the key has no 32-bit form for \(rows) moduli")
        }
        guard g > 0, g < 2 * degree, g & 1 == 1 else { throw HEError.incompatibleOperands("Galois element \(g)") }
        Self.withPointers(narrow) { keys in
            keys.withUnsafeBufferPointer { kp in
                if let table = galoisTables[g] {
                    table.withUnsafeBufferPointer { t in
                        cv_galois_keyswitch32(out, input, g, t.baseAddress, params, kp.baseAddress, keyRows, scratch.words)
                    }
                } else {
                    cv_galois_keyswitch32(out, input, g, nil, params, kp.baseAddress, keyRows, scratch.words)
                }
            }
        }
    }

    /// Whether `applyGaloisEvaluation` and `combineEvaluation` serve the elements `2^k + 1`.
    public var evaluationFormExpansion: Bool { !evaluationPermutations.isEmpty }

    /// `applyGalois` on evaluation-form words (fully reduced in, fully reduced out): σ_g permutes the evaluation
    /// points and only the digits and the special modulus visit coefficient form. Equals the transform of
    /// `applyGalois`'s output word for word. Only for the expansion elements `2^k + 1`.
    public func applyGaloisEvaluation(_ out: UnsafeMutablePointer<UInt32>, _ input: UnsafePointer<UInt32>,
                                      element g: Int, key: KeySwitchKey, scratch: Scratch) throws {
        guard let narrow = key.narrow, narrow.count == rows else {
            throw HEError.incompatibleOperands("the key has no 32-bit form for \(rows) moduli")
        }
        guard let perm = evaluationPermutations[g] else {
            throw HEError.incompatibleOperands("Galois element \(g) has no evaluation-form permutation")
        }
        Self.withPointers(narrow) { keys in
            keys.withUnsafeBufferPointer { kp in
                perm.withUnsafeBufferPointer { t in
                    cv_galois_keyswitch32_eval(out, input, t.baseAddress, params, kp.baseAddress, keyRows, scratch.words)
                }
            }
        }
    }

    /// `combine` on evaluation-form words (fully reduced in and out). `even` may be `c` and `odd` may be `r`: the
    /// split in place writes only the buffers the key switch has just touched, and the tree's last split writes
    /// straight into its leaves. `shift` a power of two below the degree.
    public func combineEvaluation(even: UnsafeMutablePointer<UInt32>, odd: UnsafeMutablePointer<UInt32>,
                                  c: UnsafePointer<UInt32>, r: UnsafePointer<UInt32>, shift: Int) throws {
        guard let table = monomials[shift] else { throw HEError.incompatibleOperands("monomial shift \(shift)") }
        let half = rows * degree
        moduli.withUnsafeBufferPointer { m in
            table.withUnsafeBufferPointer { t in
                guard let base = t.baseAddress else { return }
                cv_expand_combine32_eval(even, odd, c, r, degree, rows, m.baseAddress, base, base + half)
            }
        }
    }

    /// One expansion split: `even = c + r`, `odd = (c − r)·x^{−shift}`, coefficient form, `0 < shift < degree`.
    public func combine(even: UnsafeMutablePointer<UInt32>, odd: UnsafeMutablePointer<UInt32>,
                        c: UnsafePointer<UInt32>, r: UnsafePointer<UInt32>, shift: Int) {
        moduli.withUnsafeBufferPointer { m in
            cv_expand_combine32(even, odd, c, r, degree, rows, m.baseAddress, shift)
        }
    }

    /// Transforms a ciphertext's words (2 polynomials × `rows` × `degree`, coefficient form) to evaluation form
    /// in place; inputs may be anywhere below four times their modulus, outputs are fully reduced.
    public func forwardNTT(_ words: UnsafeMutablePointer<UInt32>) {
        let p = params.pointee
        for poly in 0..<2 {
            for r in 0..<rows {
                cv_ntt32_forward(words + (poly * rows + r) * degree, degree, p.fwd[r], p.fwd_shoup[r], moduli[r])
            }
        }
    }

    /// Transforms a ciphertext's words from evaluation to coefficient form in place; inputs may be anywhere below
    /// twice their modulus (lazy results of the kernels), outputs are fully reduced.
    public func inverseNTT(_ words: UnsafeMutablePointer<UInt32>) {
        let p = params.pointee
        for poly in 0..<2 {
            for r in 0..<rows {
                cv_ntt32_inverse(words + (poly * rows + r) * degree, degree, p.inv[r], p.inv_shoup[r], moduli[r],
                                 p.inv_n[r], p.inv_n_shoup[r])
            }
        }
    }

    /// A ciphertext over the ciphertext moduli from 32-bit words (2 polynomials × `rows` × `degree`, each below
    /// its modulus; checked).
    public func ciphertext(words: [UInt32], format: PolyFormat, context: Context) throws -> Ciphertext {
        guard words.count == ciphertextWords else { throw HEError.malformedSerialization("ciphertext word count") }
        let half = rows * degree
        let ctx = context.ciphertextContext
        let polys = try (0..<2).map { poly in
            try PolyRq(context: ctx, format: format, data: words[(poly * half)..<((poly + 1) * half)].map { UInt64($0) })
        }
        return try Ciphertext(context: context, polys: polys)
    }

    /// Calls `body` with the first word of each of the key's rows, the key kept alive meanwhile.
    private static func withPointers<R>(_ key: NarrowKeyRows, _ body: ([UnsafePointer<UInt32>?]) -> R) -> R {
        withExtendedLifetime(key) { body((0..<key.count).map { key.row($0) }) }
    }
}
