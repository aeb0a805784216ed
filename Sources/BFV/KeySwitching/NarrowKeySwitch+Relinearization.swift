import CKernels

extension NarrowKeySwitch {
    /// Relinearizes a 3-polynomial ciphertext over the ciphertext moduli to 2 polynomials (coefficient form) with
    /// the fused kernel: `(c0, c2)` through the identity automorphism (`σ_1`) gives `(c0 + ks0(c2), ks1(c2))`,
    /// and `c1` is added to the second. Equals `Context.relinearize` word for word, without its Swift division
    /// by the special modulus; the PIR reply's one relinearization per query runs here.
    public func relinearize(_ ciphertext: Ciphertext, key: EvaluationKey, context: Context,
                            scratch: Scratch) throws -> Ciphertext {
        guard let rk = key.relinearizationKey else { throw HEError.missingKey("relinearization key") }
        guard ciphertext.polys.count == 3 else { throw HEError.incompatibleOperands("relinearization needs 3 polynomials") }
        guard ciphertext.moduliCount == rows, ciphertext.polyContext == context.ciphertextContext else {
            throw HEError.incompatibleOperands("relinearization on 32-bit words needs the full ciphertext moduli")
        }
        let ct = ciphertext.converted(to: .coeff)
        let half = rows * degree
        var input = [UInt32](repeating: 0, count: ciphertextWords)
        for (slot, poly) in [0, 2].enumerated() {
            ct.polys[poly].data.withUnsafeBufferPointer { src in
                for i in 0..<half { input[slot * half + i] = UInt32(truncatingIfNeeded: src[i]) }
            }
        }
        var out = [UInt32](repeating: 0, count: ciphertextWords)
        try input.withUnsafeBufferPointer { src in
            try out.withUnsafeMutableBufferPointer { dst in
                guard let s = src.baseAddress, let d = dst.baseAddress else { return }
                try applyGalois(d, s, element: 1, key: rk, scratch: scratch)
            }
        }
        let ctx = context.ciphertextContext
        var c1 = ct.polys[1].data
        for i in 0..<half {
            let q = UInt64(moduli[i / degree])
            let s = c1[i] + UInt64(out[half + i])
            c1[i] = s >= q ? s - q : s
        }
        let polys = [PolyRq(unchecked: ctx, format: .coeff, data: out[0..<half].map { UInt64($0) }),
                     PolyRq(unchecked: ctx, format: .coeff, data: c1)]
        return try Ciphertext(context: context, polys: polys, correctionFactor: ct.correctionFactor, seed: nil)
    }
}
