import LookupProtocol
/// A URL list, URL or prefilter the URL-filter tools refuse, with a stable code and the reason.
public struct URLFilterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes.
    public enum Code: String, Sendable {
        /// A URL that cannot be normalized (empty, too long, no host, bad characters).
        case badURL = "url-filter.bad-url"
        /// A parameter out of range (false-positive rate, bit or hash count).
        case badParameter = "url-filter.bad-parameter"
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

    public var description: String { "\(code.rawValue): \(reason)" }
}
