/// Number-theory helpers used once, when a context is built: primality, roots of unity, prime search.
public enum Primes {
    /// Deterministic Miller–Rabin for 64-bit integers (the first twelve primes as bases are enough).
    public static func isPrime(_ n: UInt64) -> Bool {
        if n < 2 { return false }
        let small: [UInt64] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]
        for p in small where n % p == 0 { return n == p }
        guard let m = try? Modulus(n) else { return slowIsPrime(n) }
        var d = n - 1
        var s = 0
        while d & 1 == 0 { d >>= 1; s += 1 }
        outer: for a in small {
            var x = m.pow(a, d)
            if x == 1 || x == n - 1 { continue }
            for _ in 1..<max(s, 1) {
                x = m.multiply(x, x)
                if x == n - 1 { continue outer }
            }
            return false
        }
        return true
    }

    /// Trial division, only for values the `Modulus` type cannot hold (never on the hot path).
    private static func slowIsPrime(_ n: UInt64) -> Bool {
        var i: UInt64 = 3
        while i <= n / i {
            if n % i == 0 { return false }
            i += 2
        }
        return true
    }

    /// The numerically smallest primitive `order`-th root of unity modulo the prime `q`, or nil if none.
    ///
    /// The reference uses the smallest primitive 2N-th root for its NTT, so the choice is part of the format.
    public static func minPrimitiveRoot(order: UInt64, modulus q: Modulus) -> UInt64? {
        guard order.isPowerOfTwo, (q.value - 1) % order == 0 else { return nil }
        var generator: UInt64?
        var x: UInt64 = 2
        while x < q.value {
            let c = q.pow(x, (q.value - 1) / order)
            if q.pow(c, order / 2) == q.value - 1 {
                generator = c
                break
            }
            x += 1
        }
        guard let g = generator else { return nil }
        // Every primitive root is an odd power of g; scan them for the minimum.
        let g2 = q.multiply(g, g)
        var current = g
        var best = g
        var k: UInt64 = 1
        while k < order {
            if current < best { best = current }
            current = q.multiply(current, g2)
            k += 2
        }
        return best
    }

    /// NTT-friendly primes (`≡ 1 mod 2N`) of exactly `bitWidth` bits, largest first, excluding `avoid`.
    public static func nttPrimes(count: Int, bitWidth: Int, degree: Int, avoiding avoid: Set<UInt64>) -> [UInt64] {
        let step = UInt64(2 * degree)
        let upper: UInt64 = 1 << UInt64(bitWidth)
        var candidate = upper - (upper % step) + 1
        if candidate >= upper { candidate -= step }
        var result: [UInt64] = []
        let lower: UInt64 = 1 << UInt64(bitWidth - 1)
        while result.count < count, candidate > lower {
            if !avoid.contains(candidate), isPrime(candidate) { result.append(candidate) }
            candidate -= step
        }
        return result
    }
}
