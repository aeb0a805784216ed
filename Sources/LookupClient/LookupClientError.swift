/// Failures of the device-side client.
public enum LookupClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with a non-200 status.
    case http(status: Int, body: String)
    /// The server's answer does not fit the protocol.
    case protocolViolation(String)
    /// The server has no such use case.
    case unknownUseCase(String)

    public var description: String {
        switch self {
        case .http(let status, let body): return "HTTP \(status): \(body)"
        case .protocolViolation(let why): return "protocol violation: \(why)"
        case .unknownUseCase(let name): return "the server does not offer use case \(name)"
        }
    }
}
