/// Galois automorphisms `σ_g: a(X) ↦ a(X^g)` in both formats (SPEC-HE §7).
public enum Galois {
    /// Whether `g` is a valid element for degree N: odd and in `(1, 2N)`.
    public static func isValidElement(_ g: Int, degree: Int) -> Bool {
        g > 1 && g < 2 * degree && g & 1 == 1
    }

    /// The element that rotates SIMD columns by `step` as the reference defines it: `3^(N/2 − step)` for a positive
    /// step (slots move right), `3^|step|` for a negative one.
    public static func elementForColumnRotation(step: Int, degree: Int) throws -> Int {
        let half = degree / 2
        guard step != 0, abs(step) < half else { throw HEError.invalidParameters("rotation step \(step)") }
        let twoN = UInt64(2 * degree)
        let exponent = step > 0 ? UInt64(half - step) : UInt64(-step)
        var result: UInt64 = 1
        for _ in 0..<exponent { result = result * 3 % twoN }
        return Int(result)
    }

    /// The element that swaps the two SIMD rows: `2N − 1`.
    public static func elementSwappingRows(degree: Int) -> Int { 2 * degree - 1 }

    /// Applies `σ_g` to a polynomial in either format.
    public static func apply(_ poly: PolyRq, element g: Int) throws -> PolyRq {
        let n = poly.degree
        guard isValidElement(g, degree: n) else { throw HEError.invalidGaloisElement(g) }
        var out = PolyRq(zeroIn: poly.context, format: poly.format)
        let moduli = poly.context.moduli
        let twoN = 2 * n
        out.data.withUnsafeMutableBufferPointer { o in
            poly.data.withUnsafeBufferPointer { a in
                switch poly.format {
                case .coeff:
                    for (r, q) in moduli.enumerated() {
                        let base = r * n
                        var k = 0
                        for i in 0..<n {
                            let v = a[base + i]
                            if k < n { o[base + k] = v } else { o[base + k - n] = q.negate(v) }
                            k += g
                            if k >= twoN { k -= twoN }
                        }
                    }
                case .eval:
                    let logN = n.trailingZeroBitCount
                    for i in 0..<n {
                        let e = 2 * bitReverse(i, bits: logN) + 1
                        let src = bitReverse(((g * e) % twoN - 1) / 2, bits: logN)
                        for r in 0..<moduli.count { o[r * n + i] = a[r * n + src] }
                    }
                }
            }
        }
        return out
    }
}
