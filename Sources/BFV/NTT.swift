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
    }

    /// Forward negacyclic NTT in place. Input values must be below `q`; outputs are fully reduced.
    @inlinable
    public func forwardInPlace(_ a: UnsafeMutableBufferPointer<UInt64>) {
        let q = modulus.value
        let twoQ = q &* 2
        let n = degree
        var t = n
        var m = 1
        forward.withUnsafeBufferPointer { w in
            forwardShoup.withUnsafeBufferPointer { ws in
                while m < n {
                    t >>= 1
                    for i in 0..<m {
                        let wv = w[m + i]
                        let wsv = ws[m + i]
                        let j1 = 2 * i * t
                        for j in j1..<(j1 + t) {
                            var x = a[j]
                            if x >= twoQ { x &-= twoQ }
                            let y = modulus.multiplyShoupLazy(a[j + t], wv, wsv)
                            a[j] = x &+ y
                            a[j + t] = x &+ twoQ &- y
                        }
                    }
                    m <<= 1
                }
            }
        }
        for j in 0..<n {
            var x = a[j]
            if x >= twoQ { x &-= twoQ }
            if x >= q { x &-= q }
            a[j] = x
        }
    }

    /// Inverse negacyclic NTT in place, including the factor `N^{-1}`. Inputs below `q`; outputs fully reduced.
    @inlinable
    public func inverseInPlace(_ a: UnsafeMutableBufferPointer<UInt64>) {
        let q = modulus.value
        let twoQ = q &* 2
        let n = degree
        var t = 1
        var m = n
        inverse.withUnsafeBufferPointer { w in
            inverseShoup.withUnsafeBufferPointer { ws in
                while m > 1 {
                    let h = m >> 1
                    var j1 = 0
                    for i in 0..<h {
                        let wv = w[h + i]
                        let wsv = ws[h + i]
                        for j in j1..<(j1 + t) {
                            let u = a[j]
                            let v = a[j + t]
                            var s = u &+ v
                            if s >= twoQ { s &-= twoQ }
                            a[j] = s
                            a[j + t] = modulus.multiplyShoupLazy(u &+ twoQ &- v, wv, wsv)
                        }
                        j1 += 2 * t
                    }
                    t <<= 1
                    m = h
                }
            }
        }
        for j in 0..<n {
            a[j] = modulus.multiplyShoup(a[j], inverseDegree, inverseDegreeShoup)
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
