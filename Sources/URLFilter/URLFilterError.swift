import LookupProtocol

/// A URL list, URL or prefilter the URL-filter tools refuse, with a stable code and the reason.
public struct URLFilterError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' `CertificateError`: compare codes, not messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case badURL = "url-filter.bad-url", badParameter = "url-filter.bad-parameter"
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// A URL that cannot be normalized (empty, too long, no host, bad characters).
        public static let badURL = Code(.badURL)
        /// A parameter out of range (false-positive rate, bit or hash count).
        public static let badParameter = Code(.badParameter)
    }


    /// The code.
    public let code: Code
    /// What is wrong.
    public let reason: String

    /// An error.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    static func badURL(_ reason: String) -> URLFilterError { .init(.badURL, reason) }
    static func badParameter(_ reason: String) -> URLFilterError { .init(.badParameter, reason) }

    public var description: String { "\(code): \(reason)" }
}
