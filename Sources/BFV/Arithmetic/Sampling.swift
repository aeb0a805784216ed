import CKernels

/// The reference's samplers (SPEC-HE §5). Uniform polynomials come from a seed and are interpreted in
/// evaluation form; ternary and centred-binomial values use the byte order the reference reads.
public enum Sampling {
    /// Draws reduced per read of the source.
    private static let drawsPerRead = 256

    /// A uniform polynomial over `context`, 16 little-endian bytes per value reduced without rejection, row by row.
    /// The result is in evaluation form.
    public static func uniform<S: ByteSource>(context: PolyContext, source: inout S) -> PolyRq {
        let n = context.degree
        var poly = PolyRq(zeroIn: context, format: .eval)
        poly.data.withUnsafeMutableBufferPointer { out in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: drawsPerRead) { words in
                for (r, q) in context.moduli.enumerated() {
                    forEachRead(rowOf: n, source: &source) { start, count, bytes in
                        let row = out.baseAddress! + (r * n + start)
                        if q.bitWidth <= 30 {
                            cv_reduce_wide32(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count, UInt32(q.value),
                                             words.baseAddress!)
                            for i in 0..<count { row[i] = UInt64(words[i]) }
                        } else {
                            for i in 0..<count { row[i] = reduceDraw(i, of: bytes, modulo: q) }
                        }
                    }
                }
            }
        }
        return poly
    }

    /// `uniform(context:source:)`'s values, as 32-bit words (every modulus below 2^32), into `out`
    /// (`rowCount × degree` words): the same bytes consumed in the same order, no 64-bit polynomial made. Moduli below
    /// 2^30 (every preset's) are reduced by `cv_reduce_wide32` from the stream's own buffer.
    public static func uniformWords<S: ByteSource>(context: PolyContext, source: inout S, into out: UnsafeMutableBufferPointer<UInt32>) {
        let n = context.degree
        for (r, q) in context.moduli.enumerated() {
            forEachRead(rowOf: n, source: &source) { start, count, bytes in
                let row = out.baseAddress! + (r * n + start)
                if q.bitWidth <= 30 {
                    cv_reduce_wide32(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count, UInt32(q.value), row)
                } else {
                    for i in 0..<count { row[i] = UInt32(truncatingIfNeeded: reduceDraw(i, of: bytes, modulo: q)) }
                }
            }
        }
    }

    /// Reads one row's draws from `source`, `drawsPerRead` at a time: `body` gets the first value's index in the row,
    /// the count and their 16 bytes each.
    @inline(__always)
    private static func forEachRead<S: ByteSource>(rowOf n: Int, source: inout S,
                                                   _ body: (Int, Int, UnsafeRawBufferPointer) -> Void) {
        var start = 0
        while start < n {
            let count = min(drawsPerRead, n - start)
            source.read(16 * count) { body(start, count, $0) }
            start += count
        }
    }

    /// Draw `i` of `bytes` (16 little-endian bytes) mod `q`.
    @inline(__always)
    private static func reduceDraw(_ i: Int, of bytes: UnsafeRawBufferPointer, modulo q: Modulus) -> UInt64 {
        let lo = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16 * i, as: UInt64.self))
        let hi = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16 * i + 8, as: UInt64.self))
        return q.reduce(high: hi, low: lo)
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
