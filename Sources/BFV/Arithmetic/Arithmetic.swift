extension Context {
    private func checkSameShape(_ a: Ciphertext, _ b: Ciphertext) throws {
        guard a.polyContext == b.polyContext, a.format == b.format else {
            throw HEError.incompatibleOperands("ciphertexts differ in moduli or format")
        }
        guard a.correctionFactor == b.correctionFactor else {
            throw HEError.incompatibleOperands("ciphertexts differ in correction factor")
        }
    }

    /// Homomorphic addition (the shorter ciphertext is padded with zero polynomials).
    public func add(_ a: Ciphertext, _ b: Ciphertext) throws -> Ciphertext {
        try checkSameShape(a, b)
        var (long, short) = a.polys.count >= b.polys.count ? (a, b) : (b, a)
        for i in short.polys.indices { try long.polys[i].add(short.polys[i]) }
        long.seed = nil
        short.seed = nil
        return long
    }

    /// Homomorphic subtraction `a − b`.
    public func subtract(_ a: Ciphertext, _ b: Ciphertext) throws -> Ciphertext {
        try checkSameShape(a, b)
        var out = a
        while out.polys.count < b.polys.count { out.polys.append(PolyRq(zeroIn: a.polyContext, format: a.format)) }
        for i in b.polys.indices { try out.polys[i].subtract(b.polys[i]) }
        out.seed = nil
        return out
    }

    /// Negation.
    public func negate(_ a: Ciphertext) -> Ciphertext {
        var out = a
        for i in out.polys.indices { out.polys[i].negate() }
        out.seed = nil
        return out
    }

    /// Adds a plaintext: `c0 += Δ(m)`. Works in either format.
    public func add(_ a: Ciphertext, plaintext: Plaintext) throws -> Ciphertext {
        guard a.correctionFactor == 1 else { throw HEError.incompatibleOperands("plaintext addition needs correction factor 1") }
        var out = a
        var c0 = out.polys[0].converted(to: .coeff)
        try addScaledPlaintext(plaintext, to: &c0)
        out.polys[0] = c0.converted(to: a.format)
        out.seed = nil
        return out
    }

    /// Ciphertext × plaintext: point-wise products in evaluation form. The output is in evaluation form.
    public func multiply(_ a: Ciphertext, plaintext: EvalPlaintext) throws -> Ciphertext {
        guard plaintext.poly.context == a.polyContext else {
            throw HEError.incompatibleOperands("plaintext and ciphertext have different moduli")
        }
        var out = a.converted(to: .eval)
        for i in out.polys.indices { try out.polys[i].multiplyPointwise(plaintext.poly) }
        out.seed = nil
        return out
    }

    /// Multiplies by the monomial `X^power` (power taken mod 2N; negative powers allowed). Output in coefficient form.
    public func multiply(_ a: Ciphertext, monomialPower power: Int) throws -> Ciphertext {
        var out = a.converted(to: .coeff)
        for i in out.polys.indices { out.polys[i] = try out.polys[i].multiplied(byMonomialPower: power) }
        out.seed = nil
        return out
    }

    /// Drops the last modulus with rounding, `round(x / q_last)` (SPEC-HE §10.7). Output in coefficient form.
    public func modSwitchDown(_ a: Ciphertext) throws -> Ciphertext {
        guard a.correctionFactor == 1 else { throw HEError.incompatibleOperands("modulus switching needs correction factor 1") }
        let ctx = a.polyContext
        let k = ctx.rowCount
        guard k >= 2 else { throw HEError.incompatibleOperands("cannot drop the only modulus") }
        let level = try level(k)
        let lower = try context(moduliCount: k - 1)
        let n = degree
        let last = ctx.moduli[k - 1]
        let h = last.value / 2
        var polys: [PolyRq] = []
        for poly in a.converted(to: .coeff).polys {
            var out = [UInt64](repeating: 0, count: (k - 1) * n)
            poly.data.withUnsafeBufferPointer { x in
                for i in 0..<(k - 1) {
                    let q = ctx.moduli[i]
                    let inv = level.lastInverse[i]
                    let invShoup = q.shoup(inv)
                    for j in 0..<n {
                        let y = last.add(x[(k - 1) * n + j], h)
                        let v = q.subtract(q.add(x[i * n + j], level.lastHalf[i]), q.reduce(y))
                        out[i * n + j] = q.multiplyShoup(v, inv, invShoup)
                    }
                }
            }
            polys.append(PolyRq(unchecked: lower, format: .coeff, data: out))
        }
        return try Ciphertext(context: self, polys: polys, correctionFactor: 1, seed: nil)
    }

    /// Switches down until only `q_0` is left: the response format.
    public func modSwitchDownToSingle(_ a: Ciphertext) throws -> Ciphertext {
        var out = a.converted(to: .coeff)
        while out.moduliCount > 1 { out = try modSwitchDown(out) }
        out.seed = nil
        return out
    }
}
