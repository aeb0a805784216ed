extension Context {
    /// Key switching with one special modulus (SPEC-HE §10.3): for `c` in coefficient form over `q_0 … q_l`,
    /// returns `(u0, u1)` over the same moduli with `u0 + u1·s ≈ c·s'`. The digits are the raw RNS residues
    /// `[c]_{q_j}` (reduced mod the output modulus when larger), matching the reference's key form, and the
    /// special modulus is divided out with rounding.
    public func keySwitch(_ c: PolyRq, key: KeySwitchKey) throws -> (PolyRq, PolyRq) {
        guard let ks = keySwitching else { throw HEError.invalidParameters("no special modulus for key switching") }
        guard c.format == .coeff else { throw HEError.incompatibleOperands("key switching takes coefficient form") }
        let ctx = c.context
        let l = ctx.rowCount
        guard l <= key.count, ctx.isPrefix(of: keyContext) else {
            throw HEError.incompatibleOperands("key switching input has \(l) moduli; the key covers \(key.count)")
        }
        if let narrow = key.narrow, keyContext.ntt.allSatisfy({ $0?.narrow != nil }) {
            return try keySwitchNarrow(c, key: narrow, constants: ks)
        }
        let n = degree
        let keyRows = keyContext.rowCount
        let ciphertexts = key.ciphertexts
        // Work rows: q_0 … q_{l-1}, then p (key row L-1).
        var u0 = [UInt64](repeating: 0, count: (l + 1) * n)
        var u1 = [UInt64](repeating: 0, count: (l + 1) * n)
        try withUnsafeTemporaryAllocation(of: UInt64.self, capacity: n) { digitBuffer in
            try withUnsafeTemporaryAllocation(of: UInt128.self, capacity: 2 * n) { accBuffer in
                guard let digit = digitBuffer.baseAddress, let acc0 = accBuffer.baseAddress else { return }
                let acc1 = acc0.advanced(by: n)
                for outRow in 0...l {
                    let keyRow = outRow < l ? outRow : keyRows - 1
                    let r = keyContext.moduli[keyRow]
                    guard let tables = keyContext.ntt[keyRow] else { throw HEError.invalidParameters("no NTT for \(r.value)") }
                    accBuffer.initialize(repeating: 0)
                    for j in 0..<l {
                        let qj = ctx.moduli[j].value
                        c.data.withUnsafeBufferPointer { src in
                            let row = src.baseAddress!.advanced(by: j * n)
                            if qj > r.value {
                                for i in 0..<n { digit[i] = r.reduce(row[i]) }
                            } else {
                                digit.update(from: row, count: n)
                            }
                        }
                        tables.forwardInPlace(digitBuffer)
                        ciphertexts[j].polys[0].data.withUnsafeBufferPointer { k0 in
                            ciphertexts[j].polys[1].data.withUnsafeBufferPointer { k1 in
                                let a0 = k0.baseAddress!.advanced(by: keyRow * n)
                                let a1 = k1.baseAddress!.advanced(by: keyRow * n)
                                var i = 0
                                while i < n {
                                    let d = UInt128(digit[i])
                                    acc0[i] &+= d &* UInt128(a0[i])
                                    acc1[i] &+= d &* UInt128(a1[i])
                                    i &+= 1
                                }
                            }
                        }
                    }
                    u0.withUnsafeMutableBufferPointer { o0 in
                        u1.withUnsafeMutableBufferPointer { o1 in
                            let base = outRow * n
                            for i in 0..<n {
                                o0[base + i] = r.reduce(acc0[i])
                                o1[base + i] = r.reduce(acc1[i])
                            }
                            tables.inverseInPlace(UnsafeMutableBufferPointer(rebasing: o0[base..<(base + n)]))
                            tables.inverseInPlace(UnsafeMutableBufferPointer(rebasing: o1[base..<(base + n)]))
                        }
                    }
                }
            }
        }
        return (u0.withUnsafeBufferPointer { dropSpecialModulus($0, context: ctx, constants: ks) },
                u1.withUnsafeBufferPointer { dropSpecialModulus($0, context: ctx, constants: ks) })
    }

    /// The key switch on 32-bit words for moduli of at most 30 bits: digits transformed in place with the 32-bit
    /// NTT, products with the key's 32-bit copy accumulated in 64-bit SIMD lanes, the output transformed back
    /// in 32 bits, then divided by p.
    func keySwitchNarrow(_ c: PolyRq, key: NarrowKeyRows, constants ks: KeySwitchingConstants) throws -> (PolyRq, PolyRq) {
        let ctx = c.context
        let l = ctx.rowCount
        let n = degree
        let keyRows = keyContext.rowCount
        let keyStride = keyRows * n
        var out = [UInt32](repeating: 0, count: 2 * (l + 1) * n)
        try withUnsafeTemporaryAllocation(of: UInt32.self, capacity: n) { digitBuffer in
            try withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 2 * n) { accBuffer in
                guard let digit = digitBuffer.baseAddress, let acc0 = accBuffer.baseAddress else { return }
                let acc1 = acc0.advanced(by: n)
                // Products are below 2^60; reduce after every 8 digits so 64-bit sums cannot overflow.
                for outRow in 0...l {
                    let keyRow = outRow < l ? outRow : keyRows - 1
                    let r = keyContext.moduli[keyRow]
                    guard let ntt = keyContext.ntt[keyRow]?.narrow else { throw HEError.invalidParameters("no 32-bit NTT") }
                    accBuffer.initialize(repeating: 0)
                    for j in 0..<l {
                        let qj = ctx.moduli[j].value
                        c.data.withUnsafeBufferPointer { src in
                            let row = src.baseAddress!.advanced(by: j * n)
                            if qj > r.value {
                                for i in 0..<n { digit[i] = UInt32(truncatingIfNeeded: r.reduce(row[i])) }
                            } else {
                                for i in 0..<n { digit[i] = UInt32(truncatingIfNeeded: row[i]) }
                            }
                        }
                        ntt.forwardInPlace(digit, count: n)
                        do {
                            let k = UnsafeBufferPointer(start: key.row(j), count: key.wordsPerRow)
                            let k0 = UnsafeRawPointer(k.baseAddress!.advanced(by: keyRow * n))
                            let k1 = UnsafeRawPointer(k.baseAddress!.advanced(by: keyStride + keyRow * n))
                            let d = UnsafeRawPointer(digit)
                            let a0 = UnsafeMutableRawPointer(acc0)
                            let a1 = UnsafeMutableRawPointer(acc1)
                            var i = 0
                            while i &+ 8 <= n {
                                let dv = SIMD8<UInt64>(truncatingIfNeeded: d.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self))
                                let x0 = SIMD8<UInt64>(truncatingIfNeeded: k0.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self))
                                let x1 = SIMD8<UInt64>(truncatingIfNeeded: k1.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self))
                                a0.storeBytes(of: a0.loadUnaligned(fromByteOffset: i &* 8, as: SIMD8<UInt64>.self) &+ dv &* x0,
                                              toByteOffset: i &* 8, as: SIMD8<UInt64>.self)
                                a1.storeBytes(of: a1.loadUnaligned(fromByteOffset: i &* 8, as: SIMD8<UInt64>.self) &+ dv &* x1,
                                              toByteOffset: i &* 8, as: SIMD8<UInt64>.self)
                                i &+= 8
                            }
                            while i < n {
                                acc0[i] &+= UInt64(digit[i]) &* UInt64(k[keyRow * n + i])
                                acc1[i] &+= UInt64(digit[i]) &* UInt64(k[keyStride + keyRow * n + i])
                                i &+= 1
                            }
                        }
                        if j % 8 == 7 {
                            for i in 0..<(2 * n) { acc0[i] = r.reduce(acc0[i]) }
                        }
                    }
                    out.withUnsafeMutableBufferPointer { o in
                        let o0 = o.baseAddress!.advanced(by: outRow * n)
                        let o1 = o.baseAddress!.advanced(by: (l + 1 + outRow) * n)
                        for i in 0..<n {
                            o0[i] = UInt32(truncatingIfNeeded: r.reduce(acc0[i]))
                            o1[i] = UInt32(truncatingIfNeeded: r.reduce(acc1[i]))
                        }
                        ntt.inverseInPlace(o0, count: n)
                        ntt.inverseInPlace(o1, count: n)
                    }
                }
            }
        }
        // Divide by p with rounding: the same step as the 64-bit path, read straight from the 32-bit rows.
        let half = (l + 1) * n
        return out.withUnsafeBufferPointer { o in
            (dropSpecialModulus(UnsafeBufferPointer(rebasing: o[0..<half]), context: ctx, constants: ks),
             dropSpecialModulus(UnsafeBufferPointer(rebasing: o[half...]), context: ctx, constants: ks))
        }
    }

    /// `round(x / p)` over `q_0 … q_{l-1}`, for `x` given over `q_0 … q_{l-1}, p` (last row p), coefficient form.
    func dropSpecialModulus<Word: FixedWidthInteger & UnsignedInteger>(
        _ x: UnsafeBufferPointer<Word>, context ctx: PolyContext, constants ks: KeySwitchingConstants
    ) -> PolyRq {
        let n = degree
        let l = ctx.rowCount
        let p = ks.special
        let h = p.value / 2
        var out = [UInt64](repeating: 0, count: l * n)
        for i in 0..<l {
            let q = ctx.moduli[i]
            let inv = ks.specialInverse[i]
            let invShoup = q.shoup(inv)
            let hq = ks.specialHalf[i]
            for j in 0..<n {
                let y = p.add(UInt64(x[l * n + j]), h)
                let v = q.subtract(q.add(UInt64(x[i * n + j]), hq), q.reduce(y))
                out[i * n + j] = q.multiplyShoup(v, inv, invShoup)
            }
        }
        return PolyRq(unchecked: ctx, format: .coeff, data: out)
    }

    /// `σ_g` on a ciphertext with key switching back to `s` (SPEC-HE §10.4). Output is in coefficient form.
    public func applyGalois(_ ciphertext: Ciphertext, element g: Int, key: EvaluationKey) throws -> Ciphertext {
        guard let ksk = key.galoisKeys[g] else { throw HEError.missingKey("Galois key for element \(g)") }
        guard ciphertext.polys.count == 2 else { throw HEError.incompatibleOperands("Galois needs a 2-polynomial ciphertext") }
        guard ciphertext.correctionFactor == 1 else { throw HEError.incompatibleOperands("Galois needs correction factor 1") }
        let ct = ciphertext.converted(to: .coeff)
        var c0 = try Galois.apply(ct.polys[0], element: g)
        let c1 = try Galois.apply(ct.polys[1], element: g)
        let (u0, u1) = try keySwitch(c1, key: ksk)
        try c0.add(u0)
        return try Ciphertext(context: self, polys: [c0, u1], correctionFactor: 1, seed: nil)
    }

    /// Relinearizes a 3-polynomial ciphertext to 2 polynomials (SPEC-HE §10.4). Output is in coefficient form.
    public func relinearize(_ ciphertext: Ciphertext, key: EvaluationKey) throws -> Ciphertext {
        guard let rk = key.relinearizationKey else { throw HEError.missingKey("relinearization key") }
        guard ciphertext.polys.count == 3 else { throw HEError.incompatibleOperands("relinearization needs 3 polynomials") }
        let ct = ciphertext.converted(to: .coeff)
        let (u0, u1) = try keySwitch(ct.polys[2], key: rk)
        var c0 = ct.polys[0]
        var c1 = ct.polys[1]
        try c0.add(u0)
        try c1.add(u1)
        return try Ciphertext(context: self, polys: [c0, c1], correctionFactor: ct.correctionFactor, seed: nil)
    }
}
