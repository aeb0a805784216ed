/// Exact RNS base conversion with a floating-point correction (HPS style): the centred representative of a
/// value given modulo `B = Π from` is re-expressed modulo each target modulus.
///
/// Correct whenever the value lies in `(-B/2, B/2)` away from the boundary by more than about `2^-45·B`;
/// callers size their bases so that this holds (or, for uniformly random inputs, accept either neighbour,
/// which is still a consistent integer representative).
struct BaseConverter: Sendable {
    let from: [Modulus]
    let to: [Modulus]
    /// `(B / b_i)^{-1} mod b_i` and Shoup quotients.
    let puncturedInverse: [UInt64]
    let puncturedInverseShoup: [UInt64]
    /// `[B / b_i]_{m_j}`, row-major by target j then source i.
    let puncturedInTarget: [UInt64]
    /// `[B]_{m_j}`.
    let productInTarget: [UInt64]
    /// `1 / b_i` as doubles.
    let reciprocal: [Double]

    init(from: [Modulus], to: [Modulus]) throws {
        self.from = from
        self.to = to
        var inv: [UInt64] = []
        for (i, bi) in from.enumerated() {
            var prod: UInt64 = 1 % bi.value
            for (k, bk) in from.enumerated() where k != i { prod = bi.multiply(prod, bi.reduce(bk.value)) }
            inv.append(try bi.inverse(prod))
        }
        puncturedInverse = inv
        puncturedInverseShoup = zip(inv, from).map { $1.shoup($0) }
        var pit: [UInt64] = []
        var prodT: [UInt64] = []
        for m in to {
            for i in from.indices {
                var prod: UInt64 = 1 % m.value
                for (k, bk) in from.enumerated() where k != i { prod = m.multiply(prod, m.reduce(bk.value)) }
                pit.append(prod)
            }
            prodT.append(from.reduce(UInt64(1) % m.value) { m.multiply($0, m.reduce($1.value)) })
        }
        puncturedInTarget = pit
        productInTarget = prodT
        reciprocal = from.map { 1.0 / Double($0.value) }
    }

    /// Converts `count` values: `input[i * stride + j]` are residues mod `from[i]`; writes
    /// `output[k * outStride + j]` mod `to[k]`. `scratch` needs `from.count` words.
    func convertCentered(input: UnsafeBufferPointer<UInt64>, inputStride: Int,
                         output: UnsafeMutableBufferPointer<UInt64>, outputStride: Int, count: Int) {
        let l = from.count
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: l) { v in
            for j in 0..<count {
                var s = 0.0
                for i in 0..<l {
                    let vi = from[i].multiplyShoup(input[i * inputStride + j], puncturedInverse[i], puncturedInverseShoup[i])
                    v[i] = vi
                    s += Double(vi) * reciprocal[i]
                }
                let alpha = UInt64(s.rounded(.toNearestOrAwayFromZero))
                for (k, m) in to.enumerated() {
                    var acc: UInt128 = 0
                    for i in 0..<l { acc &+= UInt128(v[i]) * UInt128(puncturedInTarget[k * l + i]) }
                    let sum = m.reduce(acc)
                    output[k * outputStride + j] = m.subtract(sum, m.multiply(m.reduce(alpha), productInTarget[k]))
                }
            }
        }
    }
}
