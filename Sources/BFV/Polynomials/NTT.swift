/// Precomputed tables for the negacyclic NTT of one modulus and degree, in the reference's convention:
/// ψ is the smallest primitive 2N-th root of unity, the forward output is in bit-reversed order
/// (`â[i] = a(ψ^(2·br(i)+1))`), and the inverse includes the factor `N^{-1}`.
public struct NTTTables: Sendable {
    /// The modulus the tables belong to.
    public let modulus: Modulus
    /// Ring degree N.
    public let degree: Int
    /// ψ, the smallest primitive 2N-th root of unity.
    public let root: UInt64
    /// `ψ^{br(k)}` at index k, and its Shoup quotients.
    @usableFromInline let forward: [UInt64]
    @usableFromInline let forwardShoup: [UInt64]
    /// `ψ^{-br(k)}` at index k, and its Shoup quotients.
    @usableFromInline let inverse: [UInt64]
    @usableFromInline let inverseShoup: [UInt64]
    /// `N^{-1} mod q` and its Shoup quotient.
    @usableFromInline let inverseDegree: UInt64
    @usableFromInline let inverseDegreeShoup: UInt64
    /// The 32-bit tables when the modulus has at most 30 bits.
    @usableFromInline let narrow: NTT32Tables?

    /// Builds the tables; throws when `q` is not an NTT-friendly prime for `degree`.
    public init(modulus q: Modulus, degree: Int) throws {
        guard degree >= 2, UInt64(degree).isPowerOfTwo else {
            throw HEError.invalidParameters("degree \(degree) is not a power of two")
        }
        guard q.value < (1 << 62), let psi = Primes.minPrimitiveRoot(order: UInt64(2 * degree), modulus: q) else {
            throw HEError.invalidParameters("modulus \(q.value) has no primitive \(2 * degree)-th root of unity")
        }
        self.modulus = q
        self.degree = degree
        self.root = psi
        let logN = degree.trailingZeroBitCount
        let psiInv = try q.inverse(psi)
        var fwd = [UInt64](repeating: 0, count: degree)
        var inv = [UInt64](repeating: 0, count: degree)
        var power: UInt64 = 1
        var powerInv: UInt64 = 1
        for k in 0..<degree {
            let idx = bitReverse(k, bits: logN)
            fwd[idx] = power
            inv[idx] = powerInv
            power = q.multiply(power, psi)
            powerInv = q.multiply(powerInv, psiInv)
        }
        self.forward = fwd
        self.inverse = inv
        self.forwardShoup = fwd.map { q.shoup($0) }
        self.inverseShoup = inv.map { q.shoup($0) }
        self.inverseDegree = try q.inverse(UInt64(degree))
        self.inverseDegreeShoup = q.shoup(inverseDegree)
        self.narrow = NTT32Tables(modulus: q, forward: fwd, inverse: inv, inverseDegree: inverseDegree)
    }

    /// Runs a 32-bit transform on a copy of `buffer`'s values and writes them back.
    @inlinable
    func withNarrowCopy(_ buffer: UnsafeMutableBufferPointer<UInt64>, _ body: (UnsafeMutablePointer<UInt32>, Int) -> Void) {
        let n = buffer.count
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: n) { tmp in
            guard let t = tmp.baseAddress, let a = buffer.baseAddress else { return }
            var j = 0
            while j < n { t[j] = UInt32(truncatingIfNeeded: a[j]); j &+= 1 }
            body(t, n)
            j = 0
            while j < n { a[j] = UInt64(t[j]); j &+= 1 }
        }
    }

    /// Forward negacyclic NTT in place. Input values must be below `q`; outputs are fully reduced.
    ///
    /// Cooley–Tukey with Harvey's lazy butterflies: values stay in `[0, 4q)` between stages and are reduced
    /// once at the end. Index arithmetic is unchecked (`&+`): every index is below N by construction.
    @inlinable
    public func forwardInPlace(_ buffer: UnsafeMutableBufferPointer<UInt64>) {
        if let narrow {
            withNarrowCopy(buffer) { narrow.forwardInPlace($0, count: $1) }
            return
        }
        guard let a = buffer.baseAddress else { return }
        let q = modulus.value
        let twoQ = q &* 2
        let n = degree
        forward.withUnsafeBufferPointer { wBuf in
            forwardShoup.withUnsafeBufferPointer { wsBuf in
                guard let w = wBuf.baseAddress, let ws = wsBuf.baseAddress else { return }
                var t = n
                var m = 1
                while m < n {
                    t &>>= 1
                    if t == 1 {
                        // Last stage: one butterfly per twiddle, no inner loop; fused with the final reduction.
                        var i = 0
                        while i < m {
                            let wv = w[m &+ i]
                            let wsv = ws[m &+ i]
                            let x = a.advanced(by: 2 &* i)
                            var u = x[0]
                            u = Swift.min(u, u &- twoQ)
                            let v = x[1]
                            let prod = v &* wv &- v.multipliedFullWidth(by: wsv).high &* q
                            var r0 = u &+ prod
                            var r1 = u &+ twoQ &- prod
                            r0 = Swift.min(r0, r0 &- twoQ)
                            r0 = Swift.min(r0, r0 &- q)
                            r1 = Swift.min(r1, r1 &- twoQ)
                            r1 = Swift.min(r1, r1 &- q)
                            x[0] = r0
                            x[1] = r1
                            i &+= 1
                        }
                        return
                    }
                    var i = 0
                    while i < m {
                        let wv = w[m &+ i]
                        let wsv = ws[m &+ i]
                        let x = a.advanced(by: 2 &* i &* t)
                        let y = x.advanced(by: t)
                        var j = 0
                        while j < t {
                            var u = x[j]
                            if u >= twoQ { u &-= twoQ }
                            let v = y[j]
                            let prod = v &* wv &- v.multipliedFullWidth(by: wsv).high &* q
                            x[j] = u &+ prod
                            y[j] = u &+ twoQ &- prod
                            j &+= 1
                        }
                        i &+= 1
                    }
                    m &<<= 1
                }
            }
        }
        if n == 1 {
            if a[0] >= q { a[0] &-= q }
        }
    }

    /// Inverse negacyclic NTT in place, including the factor `N^{-1}`. Inputs below `q`; outputs fully reduced.
    ///
    /// Gentleman–Sande with lazy butterflies (values in `[0, 2q)`), the `N^{-1}` scaling fused into the final pass.
    @inlinable
    public func inverseInPlace(_ buffer: UnsafeMutableBufferPointer<UInt64>) {
        if let narrow {
            withNarrowCopy(buffer) { narrow.inverseInPlace($0, count: $1) }
            return
        }
        guard let a = buffer.baseAddress else { return }
        let q = modulus.value
        let twoQ = q &* 2
        let n = degree
        inverse.withUnsafeBufferPointer { wBuf in
            inverseShoup.withUnsafeBufferPointer { wsBuf in
                guard let w = wBuf.baseAddress, let ws = wsBuf.baseAddress else { return }
                // First stage: one butterfly per twiddle, no inner loop.
                let half = n &>> 1
                var k = 0
                while k < half {
                    let wv = w[half &+ k]
                    let wsv = ws[half &+ k]
                    let x = a.advanced(by: 2 &* k)
                    let u = x[0]
                    let v = x[1]
                    let s = u &+ v
                    x[0] = Swift.min(s, s &- twoQ)
                    let d = u &+ twoQ &- v
                    x[1] = d &* wv &- d.multipliedFullWidth(by: wsv).high &* q
                    k &+= 1
                }
                var t = 2
                var m = half
                while m > 1 {
                    let h = m &>> 1
                    var i = 0
                    while i < h {
                        let wv = w[h &+ i]
                        let wsv = ws[h &+ i]
                        let x = a.advanced(by: 2 &* i &* t)
                        let y = x.advanced(by: t)
                        var j = 0
                        while j < t {
                            let u = x[j]
                            let v = y[j]
                            var s = u &+ v
                            if s >= twoQ { s &-= twoQ }
                            x[j] = s
                            let d = u &+ twoQ &- v
                            y[j] = d &* wv &- d.multipliedFullWidth(by: wsv).high &* q
                            j &+= 1
                        }
                        i &+= 1
                    }
                    t &<<= 1
                    m = h
                }
            }
        }
        let inv = inverseDegree
        let invShoup = inverseDegreeShoup
        var j = 0
        while j < n {
            let x = a[j]
            var r = x &* inv &- x.multipliedFullWidth(by: invShoup).high &* q
            r = Swift.min(r, r &- q)
            a[j] = r
            j &+= 1
        }
    }
}

/// The `bits`-bit bit-reversal of `x`.
@inlinable
public func bitReverse(_ x: Int, bits: Int) -> Int {
    guard bits > 0 else { return 0 }
    return Int(UInt(truncatingIfNeeded: x).bitReversed >> UInt(UInt.bitWidth - bits))
}

extension UInt {
    /// The value with its bits in reverse order.
    @usableFromInline var bitReversed: UInt {
        var v = self
        var r: UInt = 0
        for _ in 0..<UInt.bitWidth {
            r = (r << 1) | (v & 1)
            v >>= 1
        }
        return r
    }
}
