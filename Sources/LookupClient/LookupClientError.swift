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

    /// The error for a non-200 answer: `unavailable` (with its `Retry-After` seconds) for 503 and 429, else `http`.
    public static func answer(status: Int, headers: [(String, String)], body: [UInt8]) -> LookupClientError {
        let text = String(decoding: body, as: UTF8.self)
        guard status == 503 || status == 429 else { return .http(status: status, body: text) }
        let retryAfter = headers.first { $0.0.lowercased() == "retry-after" }.flatMap { Int($0.1.trimmingCharacters(in: .whitespaces)) }
        return .unavailable(status: status, retryAfter: retryAfter.flatMap { $0 >= 0 ? $0 : nil }, body: text)
    }

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
