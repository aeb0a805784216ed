extension Context {
    /// Adds `Δ(m)` (the scaled plaintext) to `poly`, which is in coefficient form over a ciphertext prefix.
    func addScaledPlaintext(_ plaintext: Plaintext, to poly: inout PolyRq) throws {
        let level = try level(poly.context.rowCount)
        let n = degree
        let t = plaintextModulus
        let m = plaintext.poly.data
        poly.data.withUnsafeMutableBufferPointer { out in
            for (r, q) in poly.context.moduli.enumerated() {
                for j in 0..<n {
                    out[r * n + j] = q.add(out[r * n + j], level.scaledPlaintext(m[j], row: r, t: t))
                }
            }
        }
    }

    /// Symmetric encryption as the reference does it (SPEC-HE §8.3): `c1 = a` expanded from `seed` in evaluation
    /// form, `c0 = −(a·s + e) + Δ(m)`, returned in coefficient form and carrying its seed, so it serializes
    /// seeded. The error comes from `errorSource` (the system RNG in production).
    public func encrypt<S: ByteSource>(_ plaintext: Plaintext, secretKey: SecretKey, seed: [UInt8],
                                       errorSource: inout S) throws -> Ciphertext {
        let ctx = ciphertextContext
        let a = try Sampling.uniform(context: ctx, seed: seed)
        var c0 = a
        try c0.multiplyPointwise(secretKey.restricted(to: ctx))
        c0.inverseNTT()
        let e = Sampling.liftSigned(Sampling.centeredBinomial(count: degree, source: &errorSource), context: ctx)
        try c0.add(e)
        c0.negate()
        try addScaledPlaintext(plaintext, to: &c0)
        return try Ciphertext(context: self, polys: [c0, a.converted(to: .coeff)], correctionFactor: 1, seed: seed)
    }

    /// Symmetric encryption with a fresh seed and error from the system's secure RNG.
    public func encrypt(_ plaintext: Plaintext, secretKey: SecretKey) throws -> Ciphertext {
        var source = SystemByteSource()
        return try encrypt(plaintext, secretKey: secretKey, seed: SystemByteSource.seed(), errorSource: &source)
    }

    /// An encryption of zero under `s` over all L moduli in evaluation form: the body of a key-switching key.
    func encryptZeroForKey<S: ByteSource>(secretKey: SecretKey, seed: [UInt8], errorSource: inout S) throws -> (PolyRq, PolyRq) {
        let a = try Sampling.uniform(context: keyContext, seed: seed)
        var c0 = a
        try c0.multiplyPointwise(secretKey.poly)
        let e = Sampling.liftSigned(Sampling.centeredBinomial(count: degree, source: &errorSource), context: keyContext)
        try c0.add(e.converted(to: .eval))
        c0.negate()
        return (c0, a)
    }
}
