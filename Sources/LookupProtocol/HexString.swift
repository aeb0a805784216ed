extension Sequence where Element == UInt8 {
    /// Lower-case hex of the bytes, for ids in logs, error reasons and file names.
    public var hexString: String {
        let digits: StaticString = "0123456789abcdef"
        var out: [UInt8] = []
        out.reserveCapacity(underestimatedCount * 2)
        digits.withUTF8Buffer { table in
            for byte in self {
                out.append(table[Int(byte >> 4)])
                out.append(table[Int(byte & 15)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension Array where Element == UInt8 {
    /// The bytes of hex text (an even number of digits, either case); nil if it is not hex.
    public init?<Digits: Collection>(hex digits: Digits) where Digits.Element == UInt8 {
        guard digits.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var iterator = digits.makeIterator()
        while let first = iterator.next(), let second = iterator.next() {
            guard let high = nibble(first), let low = nibble(second) else { return nil }
            out.append(high << 4 | low)
        }
        self = out
    }
}
