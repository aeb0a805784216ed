/// Bit packing of residues as the reference writes them (SPEC-HE §8.1): each value's top `bits − skip` bits,
/// most significant bit first, in one big-endian bit stream per row, padded with zero bits to a byte.
public enum CoefficientPacking {
    /// Bytes one row of `count` values takes at `bits − skip` bits per value.
    @inlinable
    public static func rowByteCount(count: Int, bits: Int, skip: Int = 0) -> Int {
        (count * (bits - skip) + 7) / 8
    }

    /// Appends the packed row to `out`; values are truncated by `skip` low bits.
    public static func pack(_ values: UnsafeBufferPointer<UInt64>, bits: Int, skip: Int = 0, into out: inout [UInt8]) {
        let width = bits - skip
        precondition(width >= 1 && width <= 62, "packing width out of range")
        var acc: UInt128 = 0
        var nbits = 0
        out.reserveCapacity(out.count + rowByteCount(count: values.count, bits: bits, skip: skip))
        for v in values {
            acc = (acc << UInt128(width)) | UInt128(v >> UInt64(skip))
            nbits += width
            while nbits >= 8 {
                nbits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt128(nbits)))
            }
            acc &= (UInt128(1) << UInt128(nbits)) &- 1
        }
        if nbits > 0 { out.append(UInt8(truncatingIfNeeded: acc << UInt128(8 - nbits))) }
    }

    /// Unpacks `count` values of `bits − skip` bits from `bytes` (exactly one row), shifting them back up by `skip`.
    /// Throws if `bytes` has the wrong length or (with `modulus`) a value is not below the modulus.
    public static func unpack(_ bytes: UnsafeRawBufferPointer, count: Int, bits: Int, skip: Int = 0,
                              into out: UnsafeMutableBufferPointer<UInt64>, modulus: UInt64?, row: Int = 0) throws {
        let width = bits - skip
        guard width >= 1, width <= 62 else {
            throw HEError.malformedSerialization("packing width \(width) out of range")
        }
        guard bytes.count == rowByteCount(count: count, bits: bits, skip: skip) else {
            throw HEError.malformedSerialization("row of \(count) values at \(width) bits needs "
                + "\(rowByteCount(count: count, bits: bits, skip: skip)) bytes, got \(bytes.count)")
        }
        if skip == 0, width <= 56 {  // every key and query row: one unaligned big-endian load per value
            try unpackWindowed(bytes, count: count, width: width, into: out, modulus: modulus, row: row)
            return
        }
        var acc: UInt128 = 0
        var nbits = 0
        var pos = 0
        let mask = (UInt128(1) << UInt128(width)) &- 1
        for i in 0..<count {
            while nbits < width {
                acc = (acc << 8) | UInt128(bytes[pos])
                pos += 1
                nbits += 8
            }
            nbits -= width
            let v = UInt64(truncatingIfNeeded: (acc >> UInt128(nbits)) & mask) << UInt64(skip)
            acc &= (UInt128(1) << UInt128(nbits)) &- 1
            if let q = modulus, v >= q {
                throw HEError.coefficientOutOfRange(row: row, index: i, value: v, modulus: q)
            }
            out[i] = v
        }
    }

    /// `unpack` for values of at most 56 bits with nothing skipped: value `i` is the `width` bits at bit `i·width` of
    /// the big-endian stream, read from the 8 bytes at its first byte (zeros past the end). The same values as the
    /// byte-at-a-time loop, several times faster.
    private static func unpackWindowed(_ bytes: UnsafeRawBufferPointer, count: Int, width: Int,
                                       into out: UnsafeMutableBufferPointer<UInt64>, modulus: UInt64?, row: Int) throws {
        let total = bytes.count
        let drop = UInt64(64 - width)
        var bit = 0
        for i in 0..<count {
            let p = bit >> 3
            let word: UInt64
            if p + 8 <= total {
                word = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: p, as: UInt64.self))
            } else {
                var w: UInt64 = 0
                for k in 0..<8 { w = (w << 8) | UInt64(p + k < total ? bytes[p + k] : 0) }
                word = w
            }
            let v = (word << UInt64(bit & 7)) >> drop
            if let q = modulus, v >= q {
                throw HEError.coefficientOutOfRange(row: row, index: i, value: v, modulus: q)
            }
            out[i] = v
            bit += width
        }
    }

    /// Packed bytes of every row of `poly`, each row padded on its own; `skip` low bits dropped per value.
    public static func serialize(_ poly: PolyRq, skip: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        let n = poly.degree
        poly.data.withUnsafeBufferPointer { buf in
            for (r, q) in poly.context.moduli.enumerated() {
                pack(UnsafeBufferPointer(rebasing: buf[(r * n)..<((r + 1) * n)]), bits: q.bitWidth, skip: skip, into: &out)
            }
        }
        return out
    }

    /// Bytes a whole polynomial over `context` takes with `skip` low bits dropped.
    public static func polyByteCount(context: PolyContext, skip: Int = 0) -> Int {
        context.moduli.reduce(0) { $0 + rowByteCount(count: context.degree, bits: $1.bitWidth, skip: skip) }
    }

    /// Parses a polynomial over `context` from the start of `bytes`, returning it and the bytes consumed.
    /// Values must be below their modulus (the reference does not check this; a server must).
    public static func deserialize(_ bytes: UnsafeRawBufferPointer, context: PolyContext, format: PolyFormat,
                                   skip: Int = 0) throws -> (PolyRq, Int) {
        var poly = PolyRq(zeroIn: context, format: format)
        var offset = 0
        let n = context.degree
        for (r, q) in context.moduli.enumerated() {
            guard q.bitWidth > skip else {
                throw HEError.malformedSerialization("skip of \(skip) bits leaves nothing of a \(q.bitWidth)-bit modulus")
            }
            let len = rowByteCount(count: n, bits: q.bitWidth, skip: skip)
            guard offset + len <= bytes.count else {
                throw HEError.malformedSerialization("polynomial truncated: need \(offset + len) bytes, have \(bytes.count)")
            }
            try poly.withMutableRow(r) { row in
                try unpack(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + len)]), count: n, bits: q.bitWidth,
                           skip: skip, into: row, modulus: q.value, row: r)
            }
            offset += len
        }
        return (poly, offset)
    }
}
