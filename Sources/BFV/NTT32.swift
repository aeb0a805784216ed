/// 32-bit tables of an NTT whose modulus has at most 30 bits (`4q < 2^32`), the case of every Live Caller ID
/// preset. Butterflies run on `SIMD8<UInt32>` lanes with 32-bit Shoup multiplication, twice the lanes of the
/// 64-bit path per instruction; results are identical to the 64-bit transform.
public struct NTT32Tables: Sendable {
    @usableFromInline let q: UInt32
    @usableFromInline let forward: [UInt32]
    @usableFromInline let forwardShoup: [UInt32]
    @usableFromInline let inverse: [UInt32]
    @usableFromInline let inverseShoup: [UInt32]
    @usableFromInline let inverseDegree: UInt32
    @usableFromInline let inverseDegreeShoup: UInt32

    /// 32-bit copies of 64-bit twiddle tables, or nil when the modulus is wider than 30 bits.
    init?(modulus: Modulus, forward fwd: [UInt64], inverse inv: [UInt64], inverseDegree invN: UInt64) {
        guard modulus.bitWidth <= 30 else { return nil }
        let qv = modulus.value
        func shoup32(_ w: UInt64) -> UInt32 { UInt32((w << 32) / qv) }
        q = UInt32(qv)
        forward = fwd.map { UInt32($0) }
        forwardShoup = fwd.map(shoup32)
        inverse = inv.map { UInt32($0) }
        inverseShoup = inv.map(shoup32)
        inverseDegree = UInt32(invN)
        inverseDegreeShoup = shoup32(invN)
    }

    /// `v·w mod q` in `[0, 2q)`, lane-wise, with Shoup quotient `ws`.
    @inlinable @inline(__always)
    static func mulShoupLazy(_ v: SIMD8<UInt32>, _ w: UInt32, _ ws: UInt32, _ q: UInt32) -> SIMD8<UInt32> {
        // High halves of v·ws: view the 8 lanes as 4 64-bit words, multiply the even (low) and odd (high) 32-bit
        // lanes separately (operands known below 2^32, so one pmuludq each), and put each high half back in its
        // lane: even results shifted down, odd results masked in place.
        let words = unsafeBitCast(v, to: SIMD4<UInt64>.self)
        let factor = SIMD4<UInt64>(repeating: UInt64(ws))
        let low = SIMD4<UInt64>(repeating: 0xFFFF_FFFF)
        let even = (words & low) &* factor
        let odd = (words &>> 32) &* factor
        let qhat = unsafeBitCast((even &>> 32) | (odd & ~low), to: SIMD8<UInt32>.self)
        return v &* w &- qhat &* q
    }

    /// Scalar form of `mulShoupLazy`.
    @inlinable @inline(__always)
    static func mulShoupLazy(_ v: UInt32, _ w: UInt32, _ ws: UInt32, _ q: UInt32) -> UInt32 {
        let qhat = UInt32(truncatingIfNeeded: (UInt64(v) &* UInt64(ws)) &>> 32)
        return v &* w &- qhat &* q
    }

    /// Forward transform of `n` values below q in place; outputs fully reduced.
    @inlinable
    func forwardInPlace(_ a: UnsafeMutablePointer<UInt32>, count n: Int) {
        let twoQ = q &* 2
        let raw = UnsafeMutableRawPointer(a)
        forward.withUnsafeBufferPointer { wb in
            forwardShoup.withUnsafeBufferPointer { wsb in
                guard let w = wb.baseAddress, let ws = wsb.baseAddress else { return }
                var t = n
                var m = 1
                while m < n {
                    t &>>= 1
                    var i = 0
                    while i < m {
                        let wv = w[m &+ i]
                        let wsv = ws[m &+ i]
                        let x = 2 &* i &* t
                        let y = x &+ t
                        if t >= 8 {
                            var j = 0
                            while j < t {
                                var u = raw.loadUnaligned(fromByteOffset: (x &+ j) &* 4, as: SIMD8<UInt32>.self)
                                u = pointwiseMin(u, u &- twoQ)
                                let v = raw.loadUnaligned(fromByteOffset: (y &+ j) &* 4, as: SIMD8<UInt32>.self)
                                let prod = Self.mulShoupLazy(v, wv, wsv, q)
                                raw.storeBytes(of: u &+ prod, toByteOffset: (x &+ j) &* 4, as: SIMD8<UInt32>.self)
                                raw.storeBytes(of: u &+ twoQ &- prod, toByteOffset: (y &+ j) &* 4, as: SIMD8<UInt32>.self)
                                j &+= 8
                            }
                        } else {
                            var j = 0
                            while j < t {
                                var u = a[x &+ j]
                                u = Swift.min(u, u &- twoQ)
                                let prod = Self.mulShoupLazy(a[y &+ j], wv, wsv, q)
                                a[x &+ j] = u &+ prod
                                a[y &+ j] = u &+ twoQ &- prod
                                j &+= 1
                            }
                        }
                        i &+= 1
                    }
                    m &<<= 1
                }
            }
        }
        var j = 0
        while j < n {
            var x = a[j]
            x = Swift.min(x, x &- twoQ)
            x = Swift.min(x, x &- q)
            a[j] = x
            j &+= 1
        }
    }

    /// Inverse transform (with `N^{-1}`) of `n` values below q in place; outputs fully reduced.
    @inlinable
    func inverseInPlace(_ a: UnsafeMutablePointer<UInt32>, count n: Int) {
        let twoQ = q &* 2
        let raw = UnsafeMutableRawPointer(a)
        inverse.withUnsafeBufferPointer { wb in
            inverseShoup.withUnsafeBufferPointer { wsb in
                guard let w = wb.baseAddress, let ws = wsb.baseAddress else { return }
                var t = 1
                var m = n
                while m > 1 {
                    let h = m &>> 1
                    var i = 0
                    while i < h {
                        let wv = w[h &+ i]
                        let wsv = ws[h &+ i]
                        let x = 2 &* i &* t
                        let y = x &+ t
                        if t >= 8 {
                            var j = 0
                            while j < t {
                                let u = raw.loadUnaligned(fromByteOffset: (x &+ j) &* 4, as: SIMD8<UInt32>.self)
                                let v = raw.loadUnaligned(fromByteOffset: (y &+ j) &* 4, as: SIMD8<UInt32>.self)
                                let s = u &+ v
                                raw.storeBytes(of: pointwiseMin(s, s &- twoQ), toByteOffset: (x &+ j) &* 4, as: SIMD8<UInt32>.self)
                                raw.storeBytes(of: Self.mulShoupLazy(u &+ twoQ &- v, wv, wsv, q),
                                               toByteOffset: (y &+ j) &* 4, as: SIMD8<UInt32>.self)
                                j &+= 8
                            }
                        } else {
                            var j = 0
                            while j < t {
                                let u = a[x &+ j]
                                let v = a[y &+ j]
                                let s = u &+ v
                                a[x &+ j] = Swift.min(s, s &- twoQ)
                                a[y &+ j] = Self.mulShoupLazy(u &+ twoQ &- v, wv, wsv, q)
                                j &+= 1
                            }
                        }
                        i &+= 1
                    }
                    t &<<= 1
                    m = h
                }
            }
        }
        var j = 0
        while j < n {
            let r = Self.mulShoupLazy(a[j], inverseDegree, inverseDegreeShoup, q)
            a[j] = Swift.min(r, r &- q)
            j &+= 1
        }
    }
}
