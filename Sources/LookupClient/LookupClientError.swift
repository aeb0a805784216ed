/// Failures of the device-side client, with a stable code (in the style of swift-certificates'
/// `CertificateError`: compare codes, not messages) and what the server answered.
public struct LookupClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case http, unavailable, protocolViolation, unknownUseCase
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// The server answered with a non-200 status.
        public static let http = Code(.http)
        /// The server is overloaded or a shard has no replica right now (503 or 429): retry after `retryAfter`.
        public static let unavailable = Code(.unavailable)
        /// The server's answer does not fit the protocol.
        public static let protocolViolation = Code(.protocolViolation)
        /// The server has no such use case.
        public static let unknownUseCase = Code(.unknownUseCase)
    }

    /// What went wrong.
    public let code: Code
    /// The HTTP status, for `http` and `unavailable`.
    public let status: Int?
    /// The `Retry-After` seconds of an `unavailable` answer (nil when it carried no usable one, which a
    /// well-behaved server never does).
    public let retryAfter: Int?
    /// The answer's body, or the reason.
    public let body: String

    private init(_ code: Code, status: Int? = nil, retryAfter: Int? = nil, body: String) {
        self.code = code
        self.status = status
        self.retryAfter = retryAfter
        self.body = body
    }

    /// A non-200 answer.
    public static func http(status: Int, body: String) -> LookupClientError { .init(.http, status: status, body: body) }

    /// A 503 or 429 answer.
    public static func unavailable(status: Int, retryAfter: Int?, body: String) -> LookupClientError {
        .init(.unavailable, status: status, retryAfter: retryAfter, body: body)
    }

    /// An answer that does not fit the protocol.
    public static func protocolViolation(_ why: String) -> LookupClientError { .init(.protocolViolation, body: why) }

    /// A use case the server does not offer.
    public static func unknownUseCase(_ name: String) -> LookupClientError { .init(.unknownUseCase, body: name) }

    /// The error for a non-200 answer: `unavailable` for 503 and 429 (with their `Retry-After`), else `http`.
    public static func answer(status: Int, headers: [(String, String)], body: [UInt8]) -> LookupClientError {
        let text = String(decoding: body, as: UTF8.self)
        guard status == 503 || status == 429 else { return .http(status: status, body: text) }
        let retryAfter = headers.first { $0.0.lowercased() == "retry-after" }.flatMap { Int($0.1.trimmingCharacters(in: .whitespaces)) }
        return .unavailable(status: status, retryAfter: retryAfter.flatMap { $0 >= 0 ? $0 : nil }, body: text)
    }

    public var description: String {
        switch code {
        case .http: return "HTTP \(status ?? 0): \(body)"
        case .unavailable: return "HTTP \(status ?? 0) (Retry-After: \(retryAfter.map(String.init) ?? "missing")): \(body)"
        case .protocolViolation: return "protocol violation: \(body)"
        default: return "the server does not offer use case \(body)"
        }
    }
}
