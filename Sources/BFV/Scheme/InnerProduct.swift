extension Context {
    /// `Σ_i ciphertexts[i] ⊙ plaintexts[i]` in evaluation form: the database inner product of PIR.
    ///
    /// Products are accumulated lazily in 64-bit words and reduced once per `2^(64 − 2·bits)` terms (every
    /// 256 terms for 28-bit moduli), or in 128-bit words for moduli above 31 bits, so the loop does one
    /// multiply-add per coefficient and no allocation. Ciphertexts must already be in evaluation form.
    public func innerProduct(_ ciphertexts: [Ciphertext], _ plaintexts: [EvalPlaintext]) throws -> Ciphertext {
        guard !ciphertexts.isEmpty, ciphertexts.count == plaintexts.count else {
            throw HEError.incompatibleOperands("inner product of \(ciphertexts.count) ciphertexts and \(plaintexts.count) plaintexts")
        }
        let ctx = ciphertexts[0].polyContext
        let polyCount = ciphertexts[0].polys.count
        for (ct, pt) in zip(ciphertexts, plaintexts) {
            guard ct.format == .eval, ct.polyContext == ctx, ct.polys.count == polyCount, pt.poly.context == ctx,
                  ct.correctionFactor == 1 else {
                throw HEError.incompatibleOperands("inner product operands differ in moduli, format or shape")
            }
        }
        let n = degree
        var out = try Ciphertext.zero(context: self, moduliCount: ctx.rowCount, format: .eval, polyCount: polyCount)
        for r in 0..<ctx.rowCount {
            let q = ctx.moduli[r]
            let base = r * n
            for p in 0..<polyCount {
                out.polys[p].withMutableRow(r) { dst in
                    if q.bitWidth <= 31 {
                        let chunk = 1 << (64 - 2 * q.bitWidth)
                        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: n) { acc in
                            acc.initialize(repeating: 0)
                            var start = 0
                            while start < ciphertexts.count {
                                let end = min(start + chunk - 1, ciphertexts.count)
                                for i in start..<end {
                                    ciphertexts[i].polys[p].data.withUnsafeBufferPointer { c in
                                        plaintexts[i].poly.data.withUnsafeBufferPointer { m in
                                            for j in 0..<n { acc[j] &+= c[base + j] &* m[base + j] }
                                        }
                                    }
                                }
                                for j in 0..<n { acc[j] = q.reduce(acc[j]) }
                                start = end
                            }
                            for j in 0..<n { dst[j] = acc[j] }
                        }
                    } else {
                        withUnsafeTemporaryAllocation(of: UInt128.self, capacity: n) { acc in
                            acc.initialize(repeating: 0)
                            for i in 0..<ciphertexts.count {
                                ciphertexts[i].polys[p].data.withUnsafeBufferPointer { c in
                                    plaintexts[i].poly.data.withUnsafeBufferPointer { m in
                                        for j in 0..<n { acc[j] &+= UInt128(c[base + j]) * UInt128(m[base + j]) }
                                    }
                                }
                                if i % 8 == 7 { for j in 0..<n { acc[j] = UInt128(q.reduce(acc[j])) } }
                            }
                            for j in 0..<n { dst[j] = q.reduce(acc[j]) }
                        }
                    }
                }
            }
        }
        return out
    }
}
