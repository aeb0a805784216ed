import CKernels

/// The exact extension of polynomials from Q to Q ∪ P on 32-bit words (`cv_extend32`) for ciphertext ×
/// ciphertext products, when every modulus of Q and of the auxiliary base P has at most 30 bits: one call per
/// operand instead of polynomial conversions through 64-bit words.
final class NarrowTensor: @unchecked Sendable {
    let degree: Int
    let rows: Int
    // Immutable after init; owned here and freed in deinit.
    private let storage: UnsafeMutableRawPointer
    private let params: UnsafeMutablePointer<cv_extend_params>
    private let scratchWords: Int

    /// Tables for Q (`q`) and P (`p`) with the Q → P converter, or nil when a modulus is too wide.
    init?(q: PolyContext, p: PolyContext, converter: BaseConverter) {
        guard q.degree >= 32, let w = converter.words else { return nil }
        var tables: [NTT32Tables] = []
        for row in 0..<q.rowCount { guard let t = q.ntt[row]?.narrow else { return nil }; tables.append(t) }
        for row in 0..<p.rowCount { guard let t = p.ntt[row]?.narrow else { return nil }; tables.append(t) }
        let n = q.degree
        let m = tables.count
        let lq = q.rowCount
        degree = n
        rows = m
        let smallWords = 3 * m + 2 * lq + 2 * w.puncturedInTarget.count + w.productInTarget.count
        let wordCount = 4 * m * n + smallWords
        let bytes = wordCount * 4 + lq * 8 + 4 * m * 8 + 128
        storage = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        let words = storage.bindMemory(to: UInt32.self, capacity: wordCount)
        let doubles = (storage + wordCount * 4).alignedUp(for: Double.self).bindMemory(to: Double.self, capacity: lq)
        let pointers = UnsafeMutableRawPointer(doubles + lq).alignedUp(for: UnsafePointer<UInt32>?.self)
            .bindMemory(to: UnsafePointer<UInt32>?.self, capacity: 4 * m)
        tables.copyTwiddles(into: words, pointers: pointers, degree: n)
        var next = words + 4 * m * n
        func place(_ values: [UInt32]) -> UnsafePointer<UInt32> {
            let start = next
            for (i, v) in values.enumerated() { start[i] = v }
            next += values.count
            return UnsafePointer(start)
        }
        let moduli = place(tables.map(\.q))
        let invN = place(tables.map(\.inverseDegree))
        let invNShoup = place(tables.map(\.inverseDegreeShoup))
        let punctInv = place(w.puncturedInverse)
        let punctInvShoup = place(w.puncturedInverseShoup)
        let pit = place(w.puncturedInTarget)
        let pitShoup = place(w.puncturedInTargetShoup)
        let prod = place(w.productInTarget)
        for i in 0..<lq { doubles[i] = converter.reciprocal[i] }
        params = .allocate(capacity: 1)
        params.initialize(to: cv_extend_params(
            n: n, lq: lq, lp: p.rowCount, moduli: moduli,
            fwd: pointers, fwd_shoup: pointers + m, inv: pointers + 2 * m, inv_shoup: pointers + 3 * m,
            inv_n: invN, inv_n_shoup: invNShoup, punct_inv: punctInv, punct_inv_shoup: punctInvShoup,
            recip: doubles, punct_in_target: pit, punct_in_target_shoup: pitShoup, prod_in_target: prod))
        scratchWords = cv_extend_scratch(params)
    }

    deinit {
        params.deallocate()
        storage.deallocate()
    }

    /// Words of one extended polynomial (`rows × degree`).
    var extendedWords: Int { rows * degree }

    /// Words of a polynomial's rows over Q.
    var ciphertextWords: Int { params.pointee.lq * degree }

    /// Fresh scratch for `extend`.
    func makeScratch() -> [UInt32] { [UInt32](repeating: 0, count: scratchWords) }

    /// Writes `poly` (over Q, either form) extended to Q ∪ P in evaluation form into `out`.
    func extend(_ poly: PolyRq, into out: UnsafeMutablePointer<UInt32>, scratch: inout [UInt32]) {
        poly.data.withUnsafeBufferPointer { src in
            scratch.withUnsafeMutableBufferPointer { s in
                cv_extend32(out, src.baseAddress, 1, poly.format == .eval ? 1 : 0, params, s.baseAddress)
            }
        }
    }

    /// Extends one operand given as 32-bit words over Q for the tensor sums, and returns where its Q rows are: an
    /// evaluation-form operand's Q rows are the input itself and only its rows over P are written (from
    /// `out + ciphertextWords`, `cv_extend32_p`); a coefficient-form operand is extended whole into `out`.
    func extendOperand(words: UnsafePointer<UInt32>, eval: Bool, into out: UnsafeMutablePointer<UInt32>,
                       scratch: inout [UInt32]) -> UnsafePointer<UInt32> {
        scratch.withUnsafeMutableBufferPointer { s in
            if eval {
                cv_extend32_p(out + ciphertextWords, words, 1, params, s.baseAddress)
            } else {
                cv_extend32(out, words, 0, 0, params, s.baseAddress)
            }
        }
        return eval ? words : UnsafePointer(out)
    }
}
