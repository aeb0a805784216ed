import BFV

/// Plaintext arithmetic the homomorphic results are compared with: polynomials mod `(t, X^N + 1)`.
enum PlaintextModel {
    static func random(count: Int, t: UInt64, using rng: inout some RandomNumberGenerator) -> [UInt64] {
        (0..<count).map { _ in UInt64.random(in: 0..<t, using: &rng) }
    }

    /// A sparse polynomial: `terms` random coefficients at random positions, so products stay cheap to model.
    static func sparse(count: Int, terms: Int, t: UInt64, using rng: inout some RandomNumberGenerator) -> [UInt64] {
        var out = [UInt64](repeating: 0, count: count)
        for _ in 0..<terms { out[Int.random(in: 0..<count, using: &rng)] = UInt64.random(in: 0..<t, using: &rng) }
        return out
    }

    static func add(_ a: [UInt64], _ b: [UInt64], t: UInt64) -> [UInt64] {
        zip(a, b).map { ($0 + $1) % t }
    }

    static func subtract(_ a: [UInt64], _ b: [UInt64], t: UInt64) -> [UInt64] {
        zip(a, b).map { ($0 + t - $1) % t }
    }

    /// Negacyclic product, skipping zero coefficients of `b` (use a sparse `b`).
    static func multiply(_ a: [UInt64], _ b: [UInt64], t: UInt64) -> [UInt64] {
        let n = a.count
        var out = [UInt64](repeating: 0, count: n)
        for (j, bj) in b.enumerated() where bj != 0 {
            for (i, ai) in a.enumerated() {
                let prod = UInt64((UInt128(ai) * UInt128(bj)) % UInt128(t))
                let k = i + j
                if k < n { out[k] = (out[k] + prod) % t } else { out[k - n] = (out[k - n] + t - prod) % t }
            }
        }
        return out
    }

    /// `m(X^g)` mod `X^N + 1`.
    static func galois(_ a: [UInt64], element g: Int, t: UInt64) -> [UInt64] {
        let n = a.count
        var out = [UInt64](repeating: 0, count: n)
        for (i, v) in a.enumerated() {
            let k = (i * g) % (2 * n)
            if k < n { out[k] = v } else { out[k - n] = (t - v) % t }
        }
        return out
    }

    /// `m · X^power`.
    static func monomial(_ a: [UInt64], power: Int, t: UInt64) -> [UInt64] {
        var b = [UInt64](repeating: 0, count: a.count)
        let p = ((power % (2 * a.count)) + 2 * a.count) % (2 * a.count)
        if p < a.count { b[p] = 1 } else { b[p - a.count] = t - 1 }
        return multiply(a, b, t: t)
    }
}
