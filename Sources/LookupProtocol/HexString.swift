extension Sequence where Element == UInt8 {
    /// Lower-case hex of the bytes, for ids in logs, error reasons and file names.
    public var hexString: String {
        let digits = Array("0123456789abcdef")
        var out = ""
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return out
    }
}
