/// The reference's samplers (SPEC-HE §5). Uniform polynomials come from a seed and are interpreted in
/// evaluation form; ternary and centred-binomial values use the byte order the reference reads.
public enum Sampling {
    /// A uniform polynomial over `context`, 16 little-endian bytes per value reduced without rejection,
    /// row by row in chunks of `min(N, 1024)` values. The result is in evaluation form.
    public static func uniform<S: ByteSource>(context: PolyContext, source: inout S) -> PolyRq {
        let n = context.degree
        let chunk = min(n, 1024)
        var poly = PolyRq(zeroIn: context, format: .eval)
        var bytes = [UInt8](repeating: 0, count: 16 * chunk)
        poly.data.withUnsafeMutableBufferPointer { out in
            for (r, q) in context.moduli.enumerated() {
                var start = 0
                while start < n {
                    bytes.withUnsafeMutableBytes { source.fill($0) }
                    bytes.withUnsafeBytes { raw in
                        for i in 0..<chunk {
                            let lo = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 16 * i, as: UInt64.self))
                            let hi = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 16 * i + 8, as: UInt64.self))
                            out[r * n + start + i] = q.reduce(high: hi, low: lo)
                        }
                    }
                    start += chunk
                }
            }
        }
        return poly
    }

    /// `uniform(context:source:)`'s values, as 32-bit words (every modulus below 2^32), into `out`
    /// (`rowCount × degree` words): the same bytes consumed in the same order, no 64-bit polynomial made. Kept
    /// apart from `uniform`: one generic loop for both cost 2% more instructions per query parse (callgrind).
    public static func uniformWords<S: ByteSource>(context: PolyContext, source: inout S, into out: UnsafeMutableBufferPointer<UInt32>) {
        let n = context.degree
        let chunk = min(n, 1024)
        withUnsafeTemporaryAllocation(byteCount: 16 * chunk, alignment: 16) { bytes in
            for (r, q) in context.moduli.enumerated() {
                var start = 0
                while start < n {
                    source.fill(bytes)
                    for i in 0..<chunk {
                        let lo = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16 * i, as: UInt64.self))
                        let hi = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16 * i + 8, as: UInt64.self))
                        out[r * n + start + i] = UInt32(truncatingIfNeeded: q.reduce(high: hi, low: lo))
                    }
                    start += chunk
                }
            }
        }
    }

    /// The uniform polynomial a 32-byte seed expands to, in evaluation form.
    public static func uniform(context: PolyContext, seed: [UInt8]) throws -> PolyRq {
        var stream = try SeededByteStream(seed: seed)
        return uniform(context: context, source: &stream)
    }

    /// `count` signed ternary values in `{-1, 0, 1}`: per value 8 then 4 bytes, `(a·2^32 + b) mod 3 − 1`.
    public static func ternary<S: ByteSource>(count: Int, source: inout S) -> [Int64] {
        var out = [Int64](repeating: 0, count: count)
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<count {
            bytes.withUnsafeMutableBytes { source.fill($0) }
            let (a, b) = bytes.withUnsafeBytes { raw in
                (UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)),
                 UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))))
            }
            let v = ((UInt128(a) << 32) | UInt128(b)) % 3
            out[i] = Int64(v) - 1
        }
        return out
    }

    /// `count` centred-binomial values for σ = 3.2 (k = 21): per value two 64-bit words, low 21 bits each,
    /// `popcount(w0) − popcount(w1)`.
    public static func centeredBinomial<S: ByteSource>(count: Int, source: inout S) -> [Int64] {
        let mask: UInt64 = (1 << 21) - 1
        var out = [Int64](repeating: 0, count: count)
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<count {
            bytes.withUnsafeMutableBytes { source.fill($0) }
            let (w0, w1) = bytes.withUnsafeBytes { raw in
                (UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)),
                 UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            }
            out[i] = Int64((w0 & mask).nonzeroBitCount) - Int64((w1 & mask).nonzeroBitCount)
        }
        return out
    }

    /// Lifts signed small values into every row of `context` (coefficient form).
    public static func liftSigned(_ values: [Int64], context: PolyContext) -> PolyRq {
        let n = context.degree
        var poly = PolyRq(zeroIn: context, format: .coeff)
        poly.data.withUnsafeMutableBufferPointer { out in
            for (r, q) in context.moduli.enumerated() {
                for j in 0..<n { out[r * n + j] = q.residue(values[j]) }
            }
        }
        return poly
    }
}
