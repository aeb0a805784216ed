/// Errors converting wire messages into engine types: the message parsed, but its content is not acceptable.
public enum ProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A required field or oneof case is missing.
    case missingField(String)
    /// A field holds a value outside what the protocol allows.
    case invalidField(String)

    public var description: String {
        switch self {
        case .missingField(let name): return "missing field: \(name)"
        case .invalidField(let why): return "invalid field: \(why)"
        }
    }
}
