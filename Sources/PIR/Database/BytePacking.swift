/// Byte ↔ coefficient packing for PIR payloads (SPEC-PIR §3.1): a big-endian bit stream cut into
/// `bitsPerCoefficient`-bit values, MSB first.
public enum BytePacking {
    /// Coefficients for `bytes`, `ceil(8·len / bits)` of them, the last zero-padded on the right.
    public static func coefficients(from bytes: some Collection<UInt8>, bitsPerCoefficient bits: Int) -> [UInt64] {
        var out: [UInt64] = []
        out.reserveCapacity((bytes.count * 8 + bits - 1) / bits)
        var acc: UInt64 = 0
        var nbits = 0
        let mask: UInt64 = (1 << UInt64(bits)) - 1
        for byte in bytes {
            acc = (acc << 8) | UInt64(byte)
            nbits += 8
            while nbits >= bits {
                nbits -= bits
                out.append((acc >> UInt64(nbits)) & mask)
            }
            acc &= (1 << UInt64(nbits)) - 1
        }
        if nbits > 0 { out.append((acc << UInt64(bits - nbits)) & mask) }
        return out
    }

    /// Bytes from coefficients, each contributing its low `bits` bits MSB first; `ceil(count·bits/8)` bytes.
    public static func bytes(from coefficients: some Collection<UInt64>, bitsPerCoefficient bits: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((coefficients.count * bits + 7) / 8)
        var acc: UInt64 = 0
        var nbits = 0
        let mask: UInt64 = (1 << UInt64(bits)) - 1
        for c in coefficients {
            acc = (acc << UInt64(bits)) | (c & mask)
            nbits += bits
            while nbits >= 8 {
                nbits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt64(nbits)))
            }
            acc &= (1 << UInt64(nbits)) - 1
        }
        if nbits > 0 { out.append(UInt8(truncatingIfNeeded: acc << UInt64(8 - nbits))) }
        return out
    }
}
