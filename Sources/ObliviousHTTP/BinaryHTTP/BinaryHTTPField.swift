/// One HTTP field (header or trailer) as Binary HTTP carries it: a lowercase name and a value.
public struct BinaryHTTPField: Sendable, Equatable {
    /// The field name, lowercase (RFC 9292 §5.4: uppercase makes the message malformed).
    public var name: String
    /// The field value.
    public var value: String

    /// A field.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// Whether `name` is a valid field name: a non-empty token without uppercase letters (RFC 9110 §5.1).
    static func isValidName(_ name: [UInt8]) -> Bool {
        !name.isEmpty && name.allSatisfy { isTokenByte($0) && !(0x41...0x5A).contains($0) }
    }

    /// Whether `value` is a valid field value: visible characters, spaces and tabs, without leading or trailing
    /// whitespace (RFC 9110 §5.5).
    static func isValidValue(_ value: [UInt8]) -> Bool {
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else { return false }
        guard let first = value.first, let last = value.last else { return true }
        return first != 0x20 && first != 0x09 && last != 0x20 && last != 0x09
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default: return false
        }
    }
}
