/// The result of decrypting with diagnostics.
public struct DecryptionResult: Sendable {
    /// The plaintext.
    public let plaintext: Plaintext
    /// `log2(Q / (2·‖[t·x]_Q‖∞))` in bits; decryption is correct while it is positive.
    public let noiseBudget: Double
}

extension Context {
    /// Decrypts: `m = round(t·(c0 + c1·s + …)/Q) mod t`, times the inverse correction factor.
    public func decrypt(_ ciphertext: Ciphertext, secretKey: SecretKey) throws -> Plaintext {
        try decryptWithNoiseBudget(ciphertext, secretKey: secretKey).plaintext
    }

    /// The noise budget in bits of `ciphertext` under `secretKey`.
    public func noiseBudget(_ ciphertext: Ciphertext, secretKey: SecretKey) throws -> Double {
        try decryptWithNoiseBudget(ciphertext, secretKey: secretKey).noiseBudget
    }

    /// Decrypts and measures the noise budget in one pass. The rounding is exact: each residue contributes
    /// `t·w_i/q_i` with a 128-bit fixed-point fraction, so no big integers are needed.
    public func decryptWithNoiseBudget(_ ciphertext: Ciphertext, secretKey: SecretKey) throws -> DecryptionResult {
        let ctx = ciphertext.polyContext
        let level = try level(ctx.rowCount)
        let t = plaintextModulus
        let correctionInverse = try t.inverse(ciphertext.correctionFactor)
        // x = Σ c_k · s^k, accumulated in evaluation form.
        let s = secretKey.restricted(to: ctx)
        var x = ciphertext.polys[0].converted(to: .eval)
        var power = s
        for k in 1..<ciphertext.polys.count {
            var term = ciphertext.polys[k].converted(to: .eval)
            try term.multiplyPointwise(power)
            try x.add(term)
            if k + 1 < ciphertext.polys.count { try power.multiplyPointwise(s) }
        }
        x.inverseNTT()
        let n = degree
        var out = PolyRq(zeroIn: plaintextContext, format: .coeff)
        var maxNoise: UInt128 = 0
        let half: UInt128 = 1 << 127
        for j in 0..<n {
            var integer: UInt128 = 0
            var fraction: UInt128 = 0
            for (i, q) in ctx.moduli.enumerated() {
                let w = q.multiply(x.data[i * n + j], level.puncturedInverse[i])
                let tw = UInt128(w) * UInt128(t.value)
                let qv = UInt128(q.value)
                integer &+= tw / qv
                let rem = tw % qv
                let hi = (rem << 64) / qv
                let lo = (((rem << 64) % qv) << 64) / qv
                let (sum, overflow) = fraction.addingReportingOverflow((hi << 64) | lo)
                fraction = sum
                if overflow { integer &+= 1 }
            }
            if fraction >= half { integer &+= 1 }
            let noise = fraction >= half ? (0 &- fraction) : fraction
            if noise > maxNoise { maxNoise = noise }
            out.data[j] = t.multiply(UInt64(integer % UInt128(t.value)), correctionInverse)
        }
        let budget: Double
        if maxNoise == 0 {
            budget = .infinity
        } else {
            let lz = maxNoise.leadingZeroBitCount
            let top = UInt64(truncatingIfNeeded: (maxNoise << UInt128(lz)) >> 64)
            let log2Noise = Double(127 - lz) + log2Fraction(Double(top) / 9_223_372_036_854_775_808.0)
            budget = 127 - log2Noise
        }
        return DecryptionResult(plaintext: Plaintext(poly: out), noiseBudget: budget)
    }
}
