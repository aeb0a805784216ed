/// The few DER pieces Privacy Pass keys need: definite lengths and reading one TLV.
enum DER {
    /// A TLV with its tag, content and total size.
    struct Element {
        let tag: UInt8
        let content: ArraySlice<UInt8>
        let end: Int
    }

    /// `tag | length | content`.
    static func encode(tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag] + length(content.count) + content
    }

    static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        var bytes: [UInt8] = []
        var v = n
        while v > 0 {
            bytes.insert(UInt8(v & 0xff), at: 0)
            v >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    /// Reads the TLV starting at `start`, checking every length against the buffer.
    static func read(_ bytes: ArraySlice<UInt8>, at start: Int) throws -> Element {
        guard start + 2 <= bytes.endIndex else { throw PrivacyPassError.invalidKey("truncated DER") }
        let tag = bytes[start]
        var index = start + 1
        let first = Int(bytes[index])
        index += 1
        var length = first
        if first & 0x80 != 0 {
            let count = first & 0x7f
            guard count >= 1, count <= 3, index + count <= bytes.endIndex else { throw PrivacyPassError.invalidKey("bad DER length") }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
        }
        guard index + length <= bytes.endIndex else { throw PrivacyPassError.invalidKey("DER length beyond the data") }
        return Element(tag: tag, content: bytes[index..<(index + length)], end: index + length)
    }
}
