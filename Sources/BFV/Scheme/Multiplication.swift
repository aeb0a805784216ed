import CKernels

extension Context {
    /// Ciphertext × ciphertext without relinearization: the tensor product of two 2-polynomial ciphertexts,
    /// scaled by `t/Q` with rounding. Returns 3 polynomials in coefficient form.
    public func multiply(_ a: Ciphertext, _ b: Ciphertext) throws -> Ciphertext {
        try multiplyAccumulate([(a, b)])
    }

    /// `Σ_i a_i ⊗ b_i` without relinearization, scaled once: each pair's tensor product is accumulated exactly
    /// over `Q ∪ P` (P the level's auxiliary base) in evaluation form, and the sum `X` becomes `round(t·X/Q)`,
    /// computed in base P as `(t·X − [t·X]_Q)·Q^{-1}` and converted back to Q. Scaling the sum once is both
    /// cheaper and more precise than summing scaled products. Returns 3 polynomials in coefficient form.
    public func multiplyAccumulate(_ pairs: [(Ciphertext, Ciphertext)]) throws -> Ciphertext {
        guard let first = pairs.first else { throw HEError.incompatibleOperands("no ciphertext pairs to multiply") }
        guard pairs.count <= MultiplicationConstants.maxAccumulatedProducts else {
            throw HEError.incompatibleOperands("\(pairs.count) products exceed the auxiliary base's headroom")
        }
        let ctx = first.0.polyContext
        for (a, b) in pairs {
            guard a.polys.count == 2, b.polys.count == 2 else {
                throw HEError.incompatibleOperands("ciphertext multiplication takes 2-polynomial ciphertexts")
            }
            guard a.polyContext == ctx, b.polyContext == ctx else {
                throw HEError.incompatibleOperands("ciphertexts differ in moduli")
            }
            guard a.correctionFactor == 1, b.correctionFactor == 1 else {
                throw HEError.incompatibleOperands("ciphertext multiplication needs correction factor 1")
            }
        }
        let mc = try level(ctx.rowCount).multiplication
        let aux = mc.auxContext
        let n = degree

        // A polynomial over Q ∪ P in evaluation form: the Q part and the exact centred lift into P. An input already
        // in evaluation form keeps its Q rows as they are; only the lift needs its coefficients.
        func extend(_ poly: PolyRq) -> (PolyRq, PolyRq) {
            let coeff = poly.converted(to: .coeff)
            let qEval = poly.format == .eval ? poly : coeff.converted(to: .eval)
            var ext = PolyRq(zeroIn: aux, format: .coeff)
            coeff.data.withUnsafeBufferPointer { src in
                ext.data.withUnsafeMutableBufferPointer { dst in
                    mc.qToP.convertCentered(input: src, inputStride: n, output: dst, outputStride: n, count: n)
                }
            }
            return (qEval, ext.converted(to: .eval))
        }

        if let tensor = mc.narrowTensor {
            let words = tensor.extendedWords
            let lqn = tensor.ciphertextWords
            var operands = [UInt32](repeating: 0, count: 4 * words)
            let (accQ, accP) = try accumulateNarrow(count: pairs.count, tensor: tensor, q: ctx, p: aux) { k, scratch, accumulate in
                let (a, b) = pairs[k]
                operands.withUnsafeMutableBufferPointer { o in
                    guard let m = o.baseAddress else { return }
                    let x = UnsafePointer(m)
                    tensor.extend(a.polys[0], into: m, scratch: &scratch)
                    tensor.extend(a.polys[1], into: m + words, scratch: &scratch)
                    tensor.extend(b.polys[0], into: m + 2 * words, scratch: &scratch)
                    tensor.extend(b.polys[1], into: m + 3 * words, scratch: &scratch)
                    accumulate((x, x + words, x + 2 * words, x + 3 * words),
                               (x + lqn, x + words + lqn, x + 2 * words + lqn, x + 3 * words + lqn))
                }
            }
            return try scaledSum(accQ: accQ, accP: accP, constants: mc)
        }
        var accQ = [PolyRq](repeating: PolyRq(zeroIn: ctx, format: .eval), count: 3)
        var accP = [PolyRq](repeating: PolyRq(zeroIn: aux, format: .eval), count: 3)
        for (a, b) in pairs {
            let ae = a.polys.map(extend)
            let be = b.polys.map(extend)
            for (target, terms) in [(0, [(0, 0)]), (1, [(0, 1), (1, 0)]), (2, [(1, 1)])] {
                for (i, j) in terms {
                    var tq = ae[i].0
                    try tq.multiplyPointwise(be[j].0)
                    try accQ[target].add(tq)
                    var tp = ae[i].1
                    try tp.multiplyPointwise(be[j].1)
                    try accP[target].add(tp)
                }
            }
        }

        return try scaledSum(accQ: accQ, accP: accP, constants: mc)
    }

    /// `round(t·X/Q)` of the exact sum `X` given over `Q ∪ P` in evaluation form (3 polynomials): computed in
    /// base P as `(t·X − [t·X]_Q)·Q^{-1}` and converted back to Q. Returns 3 polynomials in coefficient form.
    private func scaledSum(accQ: [PolyRq], accP: [PolyRq], constants mc: MultiplicationConstants) throws -> Ciphertext {
        let aux = mc.auxContext
        let ctx = accQ[0].context
        let n = degree
        let lp = aux.rowCount
        func scale(_ xq: PolyRq, _ xp: PolyRq) -> PolyRq {
            // r = [t·X]_Q, lifted centred into P.
            var r = xq
            r.multiply(byRowScalars: mc.tModQ)
            var rp = PolyRq(zeroIn: aux, format: .coeff)
            r.data.withUnsafeBufferPointer { src in
                rp.data.withUnsafeMutableBufferPointer { dst in
                    mc.qToP.convertCentered(input: src, inputStride: n, output: dst, outputStride: n, count: n)
                }
            }
            // Y = (t·X − r) · Q^{-1} in base P.
            var y = [UInt64](repeating: 0, count: lp * n)
            for k in 0..<lp {
                let pk = aux.moduli[k]
                let tk = mc.tModP[k]
                let qi = mc.qInverseModP[k]
                for j in 0..<n {
                    let tx = pk.multiply(xp.data[k * n + j], tk)
                    y[k * n + j] = pk.multiply(pk.subtract(tx, rp.data[k * n + j]), qi)
                }
            }
            var out = PolyRq(zeroIn: ctx, format: .coeff)
            y.withUnsafeBufferPointer { src in
                out.data.withUnsafeMutableBufferPointer { dst in
                    mc.pToQ.convertCentered(input: src, inputStride: n, output: dst, outputStride: n, count: n)
                }
            }
            return out
        }
        let polys = (0..<3).map { scale(accQ[$0].converted(to: .coeff), accP[$0].converted(to: .coeff)) }
        return try Ciphertext(context: self, polys: polys, correctionFactor: 1, seed: nil)
    }

    /// `Σ_i a_i ⊗ b_i` (as `multiplyAccumulate`) for ciphertexts over the ciphertext moduli given as 32-bit words
    /// (2 polynomials × rows × N each, evaluation form where the flag says so), for the engine's own kernels:
    /// no conversion to polynomials on the way in. Needs 30-bit moduli (`narrowTensor`).
    package func multiplyAccumulate<A: CiphertextWords, B: CiphertextWords>(
        words pairs: [(a: A, aEval: Bool, b: B, bEval: Bool)]
    ) throws -> Ciphertext {
        guard !pairs.isEmpty else { throw HEError.incompatibleOperands("no ciphertext pairs to multiply") }
        guard pairs.count <= MultiplicationConstants.maxAccumulatedProducts else {
            throw HEError.incompatibleOperands("\(pairs.count) products exceed the auxiliary base's headroom")
        }
        let ctx = ciphertextContext
        let mc = try level(ctx.rowCount).multiplication
        guard let tensor = mc.narrowTensor else { throw HEError.invalidParameters("no 32-bit multiplication kernel") }
        let half = ctx.rowCount * degree
        for pair in pairs where pair.a.wordCount != 2 * half || pair.b.wordCount != 2 * half {
            throw HEError.incompatibleOperands("ciphertext words must hold 2 polynomials over the ciphertext moduli")
        }
        // The Q rows of evaluation-form operands are read where they are and only their rows over P are computed;
        // coefficient-form operands are extended whole. Every word of the buffer is written before it is read.
        let words = tensor.extendedWords
        let lqn = tensor.ciphertextWords
        let extended = UnsafeMutablePointer<UInt32>.allocate(capacity: 4 * words)
        defer { extended.deallocate() }
        let (accQ, accP) = try accumulateNarrow(count: pairs.count, tensor: tensor, q: ctx, p: mc.auxContext) { k, scratch, accumulate in
            let pair = pairs[k]
            pair.a.withWords { a in
                pair.b.withWords { b in
                    guard let pa = a.baseAddress, let pb = b.baseAddress else { return }
                    func extend(_ i: Int, _ input: UnsafePointer<UInt32>, eval: Bool) -> UnsafePointer<UInt32> {
                        tensor.extendOperand(words: input, eval: eval, into: extended + i * words, scratch: &scratch)
                    }
                    let q = (extend(0, pa, eval: pair.aEval), extend(1, pa + half, eval: pair.aEval),
                             extend(2, pb, eval: pair.bEval), extend(3, pb + half, eval: pair.bEval))
                    let p = UnsafePointer(extended + lqn)
                    accumulate(q, (p, p + words, p + 2 * words, p + 3 * words))
                }
            }
        }
        return try scaledSum(accQ: accQ, accP: accP, constants: mc)
    }

    /// The 32-bit extension of `poly` (over the ciphertext moduli) to Q ∪ P in evaluation form, with the moduli of
    /// P, or nil without a 32-bit kernel: lets tests check `NarrowTensor` against the exact centred lift. With
    /// `asWords` the input goes in as 32-bit words the way `multiplyAccumulate(words:)` passes it (an
    /// evaluation-form input's Q rows as they are, only its P rows computed), else as the polynomial.
    package func narrowExtension(of poly: PolyRq, asWords: Bool) throws
        -> (words: [UInt32], auxiliaryModuli: [UInt64])? {
        let mc = try level(poly.context.rowCount).multiplication
        guard let tensor = mc.narrowTensor, poly.context == ciphertextContext else { return nil }
        let lqn = tensor.ciphertextWords
        let input = poly.data.map { UInt32(truncatingIfNeeded: $0) }
        var scratch = tensor.makeScratch()
        var out = [UInt32](repeating: 0, count: tensor.extendedWords)
        input.withUnsafeBufferPointer { w in
            out.withUnsafeMutableBufferPointer { o in
                guard let src = w.baseAddress, let dst = o.baseAddress else { return }
                guard asWords else { return tensor.extend(poly, into: dst, scratch: &scratch) }
                let qRows = tensor.extendOperand(words: src, eval: poly.format == .eval, into: dst, scratch: &scratch)
                if qRows != UnsafePointer(dst) { dst.update(from: qRows, count: lqn) }
            }
        }
        return (out, mc.auxContext.moduliValues)
    }

    /// Four operands' rows: (a0, a1, b0, b1).
    typealias OperandRows = (UnsafePointer<UInt32>, UnsafePointer<UInt32>, UnsafePointer<UInt32>, UnsafePointer<UInt32>)

    /// The tensor sums for residues below 2^30: each operand is extended to Q ∪ P on 32-bit words
    /// (`NarrowTensor`), its four products go straight into 64-bit accumulators, reduced once every 7 pairs.
    /// `body(k, scratch, accumulate)` extends pair k and hands `accumulate` its operands' rows over Q and over P
    /// (a0, a1, b0, b1 each), wherever they are. Returns the 3 sums over Q and over P (evaluation form).
    private func accumulateNarrow(count: Int, tensor: NarrowTensor, q: PolyContext, p: PolyContext,
                                  body: (Int, inout [UInt32], (OperandRows, OperandRows) -> Void) -> Void) throws
        -> (accQ: [PolyRq], accP: [PolyRq]) {
        let lq = q.rowCount
        let moduli = q.moduli + p.moduli
        let n = degree
        let rows = tensor.rows
        guard rows == moduli.count else { throw HEError.invalidParameters("extension rows") }
        let words = tensor.extendedWords
        let qWords = lq * n
        let pWords = words - qWords
        var acc = [UInt64](repeating: 0, count: 3 * words)
        var scratch = tensor.makeScratch()
        func reduceAll() {
            acc.withUnsafeMutableBufferPointer { a in
                guard let base = a.baseAddress else { return }
                for poly in 0..<3 {
                    for (r, m) in moduli.enumerated() {
                        cv_reduce64(base + (poly * rows + r) * n, n, UInt32(truncatingIfNeeded: m.value))
                    }
                }
            }
        }
        var pending = 0
        for k in 0..<count {
            acc.withUnsafeMutableBufferPointer { accBuffer in
                guard let c = accBuffer.baseAddress else { return }
                body(k, &scratch) { qRows, pRows in
                    cv_tensor_accumulate32(c, c + words, c + 2 * words, qRows.0, qRows.1, qRows.2, qRows.3, qWords)
                    cv_tensor_accumulate32(c + qWords, c + words + qWords, c + 2 * words + qWords,
                                           pRows.0, pRows.1, pRows.2, pRows.3, pWords)
                }
            }
            pending += 1
            if pending == 7 {
                reduceAll()
                pending = 0
            }
        }
        reduceAll()
        let accQ = (0..<3).map { poly in
            PolyRq(unchecked: q, format: .eval, data: Array(acc[(poly * words)..<(poly * words + lq * n)]))
        }
        let accP = (0..<3).map { poly in
            PolyRq(unchecked: p, format: .eval, data: Array(acc[(poly * words + lq * n)..<((poly + 1) * words)]))
        }
        return (accQ, accP)
    }

    /// Ciphertext × ciphertext followed by relinearization: a 2-polynomial ciphertext in coefficient form.
    public func multiplyAndRelinearize(_ a: Ciphertext, _ b: Ciphertext, key: EvaluationKey) throws -> Ciphertext {
        try relinearize(multiply(a, b), key: key)
    }
}
