/// Failures of the device-side client.
public enum LookupClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with a non-200 status.
    case http(status: Int, body: String)
    /// The server is overloaded or a shard has no replica right now (503 or 429): retry after `retryAfter`
    /// seconds (nil when the answer carried no usable `Retry-After`, which a well-behaved server never does).
    case unavailable(status: Int, retryAfter: Int?, body: String)
    /// The server's answer does not fit the protocol.
    case protocolViolation(String)
    /// The server has no such use case.
    case unknownUseCase(String)

    public var description: String {
        switch self {
        case .http(let status, let body): return "HTTP \(status): \(body)"
        case .unavailable(let status, let retryAfter, let body):
            return "HTTP \(status) (Retry-After: \(retryAfter.map(String.init) ?? "missing")): \(body)"
        case .protocolViolation(let why): return "protocol violation: \(why)"
        case .unknownUseCase(let name): return "the server does not offer use case \(name)"
        }
    }
}
