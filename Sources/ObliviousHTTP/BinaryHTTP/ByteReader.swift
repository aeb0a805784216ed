/// Reads a byte string front to back, every read bounded by what is left: a length that claims more than the
/// message holds is `BinaryHTTPError.truncated`, never an allocation.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - position }
    var isAtEnd: Bool { position == bytes.count }

    mutating func byte() throws -> UInt8 {
        guard position < bytes.count else { throw BinaryHTTPError(.truncated, "the message ends early") }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func bytes(_ count: Int) throws -> [UInt8] {
        guard count >= 0, count <= remaining else { throw BinaryHTTPError(.truncated, "a length runs past the end of the message") }
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    /// A variable-length integer (RFC 9000 §16): the top two bits of the first byte give its size.
    mutating func varint() throws -> UInt64 {
        let first = try byte()
        let size = 1 << Int(first >> 6)
        var value = UInt64(first & 0x3F)
        for _ in 1..<size { value = value << 8 | UInt64(try byte()) }
        return value
    }

    /// A length-prefixed byte string of at most `limit` bytes.
    mutating func lengthPrefixed(limit: Int) throws -> [UInt8] {
        let length = try varint()
        guard length <= UInt64(limit) else { throw BinaryHTTPError(.tooLarge, "a length of \(length) bytes exceeds \(limit)") }
        return try bytes(Int(length))
    }

    /// The rest of the message.
    mutating func rest() -> [UInt8] {
        defer { position = bytes.count }
        return Array(bytes[position...])
    }
}

/// Writes variable-length integers (RFC 9000 §16) in their shortest form.
enum Varint {
    /// The largest value a variable-length integer holds.
    static let max: UInt64 = (1 << 62) - 1

    static func append(_ value: UInt64, to out: inout [UInt8]) {
        precondition(value <= max, "a varint holds at most 2^62 - 1")
        switch value {
        case ..<64: out.append(UInt8(value))
        case ..<16_384: out += [UInt8(0x40 | value >> 8), UInt8(value & 0xFF)]
        case ..<1_073_741_824: out += (0..<4).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) | ($0 == 3 ? 0x80 : 0) }
        default: out += (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) | ($0 == 7 ? 0xC0 : 0) }
        }
    }

    static func appendLengthPrefixed(_ bytes: [UInt8], to out: inout [UInt8]) {
        append(UInt64(bytes.count), to: &out)
        out += bytes
    }
}
