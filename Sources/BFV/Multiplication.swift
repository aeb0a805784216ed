extension Context {
    /// Ciphertext × ciphertext without relinearization: the tensor product of two 2-polynomial ciphertexts,
    /// scaled by `t/Q` with rounding. Returns 3 polynomials in coefficient form.
    ///
    /// Each input polynomial is lifted exactly from Q to `Q ∪ P` (P the level's auxiliary base), the tensor is
    /// taken in evaluation form, and each output `X` becomes `round(t·X/Q)` computed in base P as
    /// `(t·X − [t·X]_Q)·Q^{-1}` and converted back to Q.
    public func multiply(_ a: Ciphertext, _ b: Ciphertext) throws -> Ciphertext {
        guard a.polys.count == 2, b.polys.count == 2 else {
            throw HEError.incompatibleOperands("ciphertext multiplication takes 2-polynomial ciphertexts")
        }
        guard a.polyContext == b.polyContext else { throw HEError.incompatibleOperands("ciphertexts differ in moduli") }
        guard a.correctionFactor == 1, b.correctionFactor == 1 else {
            throw HEError.incompatibleOperands("ciphertext multiplication needs correction factor 1")
        }
        let ctx = a.polyContext
        let mc = try level(ctx.rowCount).multiplication
        let aux = mc.auxContext
        let n = degree
        let lp = aux.rowCount

        // Extended polynomials: Q rows then P rows, evaluation form.
        func extend(_ poly: PolyRq) -> (PolyRq, PolyRq) {
            let coeff = poly.converted(to: .coeff)
            var ext = PolyRq(zeroIn: aux, format: .coeff)
            coeff.data.withUnsafeBufferPointer { src in
                ext.data.withUnsafeMutableBufferPointer { dst in
                    mc.qToP.convertCentered(input: src, inputStride: n, output: dst, outputStride: n, count: n)
                }
            }
            return (coeff.converted(to: .eval), ext.converted(to: .eval))
        }
        let aExt = a.polys.map(extend)
        let bExt = b.polys.map(extend)

        func tensor(_ pairs: [(Int, Int)]) throws -> (PolyRq, PolyRq) {
            var q = PolyRq(zeroIn: ctx, format: .eval)
            var p = PolyRq(zeroIn: aux, format: .eval)
            for (i, j) in pairs {
                var tq = aExt[i].0
                try tq.multiplyPointwise(bExt[j].0)
                try q.add(tq)
                var tp = aExt[i].1
                try tp.multiplyPointwise(bExt[j].1)
                try p.add(tp)
            }
            return (q.converted(to: .coeff), p.converted(to: .coeff))
        }

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

        let d0 = try tensor([(0, 0)])
        let d1 = try tensor([(0, 1), (1, 0)])
        let d2 = try tensor([(1, 1)])
        return try Ciphertext(context: self, polys: [scale(d0.0, d0.1), scale(d1.0, d1.1), scale(d2.0, d2.1)],
                              correctionFactor: 1, seed: nil)
    }

    /// Ciphertext × ciphertext followed by relinearization: a 2-polynomial ciphertext in coefficient form.
    public func multiplyAndRelinearize(_ a: Ciphertext, _ b: Ciphertext, key: EvaluationKey) throws -> Ciphertext {
        try relinearize(multiply(a, b), key: key)
    }
}
