/// A word-sized modulus with the precomputed constants for fast reduction.
///
/// Supports odd and even moduli in `[2, 2^62)`, which covers every preset (moduli up to 60 bits) and leaves
/// the headroom that lazy reduction needs (values up to `4q` in the NTT). Multiplication uses Barrett
/// reduction of the 128-bit product; multiplication by a fixed operand uses Shoup's precomputed quotient.
public struct Modulus: Sendable, Hashable, CustomStringConvertible {
    /// The modulus `q`.
    public let value: UInt64
    /// `ceil(log2 q)`: the number of bits needed for `q - 1`, the packing width on the wire.
    public let bitWidth: Int
    /// `floor(2^128 / q)`, high and low words, for Barrett reduction of 128-bit values.
    @usableFromInline let barrettHigh: UInt64
    @usableFromInline let barrettLow: UInt64
    /// `floor(2^64 / q)`, for Barrett reduction of 64-bit values.
    @usableFromInline let barrett64: UInt64

    /// The largest modulus the arithmetic supports (exclusive).
    public static let maxValue: UInt64 = 1 << 62

    /// Creates a modulus; throws for values outside `[2, 2^62)`.
    public init(_ value: UInt64) throws {
        guard value >= 2, value < Modulus.maxValue else {
            throw HEError.invalidParameters("modulus \(value) outside [2, 2^62)")
        }
        self.value = value
        self.bitWidth = value.isPowerOfTwo ? value.trailingZeroBitCount : (64 - value.leadingZeroBitCount)
        // floor(2^128 / q) = floor((2^128 - 1) / q) unless q divides 2^128 (q a power of two).
        var ratio = UInt128.max / UInt128(value)
        if UInt128.max % UInt128(value) == UInt128(value - 1) { ratio &+= 1 }
        self.barrettHigh = UInt64(truncatingIfNeeded: ratio >> 64)
        self.barrettLow = UInt64(truncatingIfNeeded: ratio)
        var r64 = UInt64.max / value
        if UInt64.max % value == value - 1 { r64 &+= 1 }
        self.barrett64 = r64
    }

    public var description: String { "\(value)" }

    /// `x mod q` for any 64-bit `x`.
    @inlinable @inline(__always)
    public func reduce(_ x: UInt64) -> UInt64 {
        let qhat = x.multipliedFullWidth(by: barrett64).high
        var r = x &- qhat &* value
        if r >= value { r &-= value }
        return r
    }

    /// `x mod q` for a 128-bit `x` given as high and low words.
    @inlinable @inline(__always)
    public func reduce(high z1: UInt64, low z0: UInt64) -> UInt64 {
        // Estimate floor(z * floor(2^128/q) / 2^128) keeping only the words that matter.
        let carry = z0.multipliedFullWidth(by: barrettLow).high
        let t2 = z0.multipliedFullWidth(by: barrettHigh)
        let (t1, o1) = t2.low.addingReportingOverflow(carry)
        let t3 = t2.high &+ (o1 ? 1 : 0)
        let t4 = z1.multipliedFullWidth(by: barrettLow)
        let (_, o2) = t1.addingReportingOverflow(t4.low)
        let carry2 = t4.high &+ (o2 ? 1 : 0)
        let qhat = z1 &* barrettHigh &+ t3 &+ carry2
        var r = z0 &- qhat &* value
        if r >= value { r &-= value }
        return r
    }

    /// `x mod q` for a 128-bit `x`.
    @inlinable @inline(__always)
    public func reduce(_ x: UInt128) -> UInt64 {
        reduce(high: UInt64(truncatingIfNeeded: x >> 64), low: UInt64(truncatingIfNeeded: x))
    }

    /// `a * b mod q` for `a, b < q` (or any operands whose product fits 128 bits).
    @inlinable @inline(__always)
    public func multiply(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let p = a.multipliedFullWidth(by: b)
        return reduce(high: p.high, low: p.low)
    }

    /// `a + b mod q` for `a, b < q`.
    @inlinable @inline(__always)
    public func add(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let s = a &+ b
        return s >= value ? s &- value : s
    }

    /// `a - b mod q` for `a, b < q`.
    @inlinable @inline(__always)
    public func subtract(_ a: UInt64, _ b: UInt64) -> UInt64 {
        a >= b ? a &- b : a &+ value &- b
    }

    /// `-a mod q` for `a < q`.
    @inlinable @inline(__always)
    public func negate(_ a: UInt64) -> UInt64 {
        a == 0 ? 0 : value &- a
    }

    /// Shoup's precomputed quotient `floor(w * 2^64 / q)` for a fixed multiplicand `w < q`.
    @inlinable
    public func shoup(_ w: UInt64) -> UInt64 {
        UInt64(truncatingIfNeeded: (UInt128(w) << 64) / UInt128(value))
    }

    /// `x * w mod q` in `[0, 2q)` with Shoup's quotient `wShoup`; `x` may be any 64-bit value.
    @inlinable @inline(__always)
    public func multiplyShoupLazy(_ x: UInt64, _ w: UInt64, _ wShoup: UInt64) -> UInt64 {
        let qhat = x.multipliedFullWidth(by: wShoup).high
        return x &* w &- qhat &* value
    }

    /// `x * w mod q` in `[0, q)` with Shoup's quotient `wShoup`.
    @inlinable @inline(__always)
    public func multiplyShoup(_ x: UInt64, _ w: UInt64, _ wShoup: UInt64) -> UInt64 {
        let r = multiplyShoupLazy(x, w, wShoup)
        return r >= value ? r &- value : r
    }

    /// `base^exponent mod q`.
    public func pow(_ base: UInt64, _ exponent: UInt64) -> UInt64 {
        var result: UInt64 = 1 % value
        var b = reduce(base)
        var e = exponent
        while e > 0 {
            if e & 1 == 1 { result = multiply(result, b) }
            b = multiply(b, b)
            e >>= 1
        }
        return result
    }

    /// The inverse of `a` modulo `q`, by the extended Euclidean algorithm; throws if it does not exist.
    public func inverse(_ a: UInt64) throws -> UInt64 {
        var (r0, r1) = (Int128(value), Int128(reduce(a)))
        var (s0, s1) = (Int128(0), Int128(1))
        while r1 != 0 {
            let quotient = r0 / r1
            (r0, r1) = (r1, r0 - quotient * r1)
            (s0, s1) = (s1, s0 - quotient * s1)
        }
        guard r0 == 1 else { throw HEError.notInvertible(value: a, modulus: value) }
        if s0 < 0 { s0 += Int128(value) }
        return UInt64(s0)
    }

    /// Maps a signed integer to its residue in `[0, q)`.
    @inlinable
    public func residue(_ x: Int64) -> UInt64 {
        x >= 0 ? reduce(UInt64(x)) : negate(reduce(x.magnitude))
    }

    /// The centred representative of `x < q`, in `(-q/2, q/2]`.
    @inlinable
    public func centered(_ x: UInt64) -> Int64 {
        x > value / 2 ? -Int64(value &- x) : Int64(x)
    }
}

extension UInt64 {
    /// Whether the value is a power of two (zero is not).
    @inlinable var isPowerOfTwo: Bool { self != 0 && (self & (self &- 1)) == 0 }
}
