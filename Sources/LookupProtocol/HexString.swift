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
