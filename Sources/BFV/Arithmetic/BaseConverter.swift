import CKernels

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
    /// Whether `Σ_i v_i·[B/b_i]_m` always fits 64 bits (every modulus small enough), so pass 2 skips 128-bit sums.
    let narrowSums: Bool
    /// 32-bit tables for the `CKernels` conversion, when every modulus on both sides has at most 30 bits.
    let words: Words?

    /// The tables `cv_convert_centered32` reads.
    struct Words: Sendable {
        let from: [UInt32]
        let puncturedInverse: [UInt32]
        let puncturedInverseShoup: [UInt32]
        let to: [UInt32]
        let puncturedInTarget: [UInt32]
        let puncturedInTargetShoup: [UInt32]
        let productInTarget: [UInt32]
    }

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
        let fromBits = from.map(\.bitWidth).max() ?? 64
        let toBits = to.map(\.bitWidth).max() ?? 64
        narrowSums = fromBits + toBits + (64 - UInt64(max(from.count, 1)).leadingZeroBitCount) <= 63
        if fromBits <= 30, toBits <= 30, from.count < 64 {
            func word(_ x: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: x) }
            func shoup32(_ w: UInt64, _ q: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: (w << 32) / q) }
            words = Words(
                from: from.map { word($0.value) },
                puncturedInverse: inv.map(word),
                puncturedInverseShoup: zip(inv, from).map { shoup32($0, $1.value) },
                to: to.map { word($0.value) },
                puncturedInTarget: pit.map(word),
                puncturedInTargetShoup: pit.indices.map { shoup32(pit[$0], to[$0 / from.count].value) },
                productInTarget: prodT.map(word))
        } else {
            words = nil
        }
    }

    /// Converts `count` values: `input[i * stride + j]` are residues mod `from[i]`; writes
    /// `output[k * outStride + j]` mod `to[k]`.
    ///
    /// Two passes over raw buffers: first the punctured products `v_i` and the correction `α` per value, then one
    /// target modulus at a time (`Σ v_i·[B/b_i]_m − α·[B]_m`, accumulated in 128 bits, reduced once).
    func convertCentered(input: UnsafeBufferPointer<UInt64>, inputStride: Int,
                         output: UnsafeMutableBufferPointer<UInt64>, outputStride: Int, count: Int) {
        let l = from.count
        guard let inBase = input.baseAddress, let outBase = output.baseAddress else { return }
        if let w = words {
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: (l + 2) * count) { scratch in
                cv_convert_centered32(outBase, outputStride, inBase, inputStride, count, l, w.from, w.puncturedInverse,
                                      w.puncturedInverseShoup, reciprocal, to.count, w.to, w.puncturedInTarget,
                                      w.puncturedInTargetShoup, w.productInTarget, scratch.baseAddress)
            }
            return
        }
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: (l + 1) * count) { scratch in
            guard let v = scratch.baseAddress else { return }
            let alpha = v.advanced(by: l * count)
            // Pass 1: v_i = [x_i · (B/b_i)^{-1}]_{b_i}, and α = round(Σ v_i / b_i).
            withUnsafeTemporaryAllocation(of: Double.self, capacity: count) { sums in
                guard let sum = sums.baseAddress else { return }
                for j in 0..<count { sum[j] = 0 }
                for i in 0..<l {
                    let b = from[i]
                    let w = puncturedInverse[i]
                    let ws = puncturedInverseShoup[i]
                    let recip = reciprocal[i]
                    let src = inBase.advanced(by: i * inputStride)
                    let dst = v.advanced(by: i * count)
                    for j in 0..<count {
                        let x = b.multiplyShoup(src[j], w, ws)
                        dst[j] = x
                        sum[j] += Double(x) * recip
                    }
                }
                // The sums are non-negative: adding one half and truncating rounds half away from zero.
                for j in 0..<count { alpha[j] = UInt64(sum[j] + 0.5) }
            }
            // Pass 2: per target modulus.
            for (k, m) in to.enumerated() {
                let dst = outBase.advanced(by: k * outputStride)
                let correction = productInTarget[k]
                puncturedInTarget.withUnsafeBufferPointer { table in
                    guard let factors = table.baseAddress?.advanced(by: k * l) else { return }
                    if narrowSums {
                        for j in 0..<count {
                            var acc: UInt64 = 0
                            for i in 0..<l { acc &+= v[i * count + j] &* factors[i] }
                            dst[j] = m.subtract(m.reduce(acc), m.multiply(alpha[j], correction))
                        }
                        return
                    }
                    for j in 0..<count {
                        var acc: UInt128 = 0
                        for i in 0..<l { acc &+= UInt128(v[i * count + j]) &* UInt128(factors[i]) }
                        let sum = m.reduce(acc)
                        dst[j] = m.subtract(sum, m.multiply(alpha[j], correction))
                    }
                }
            }
        }
    }
}
