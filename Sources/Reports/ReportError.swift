import LookupEngine
import LookupStorage
/// Why a report is refused: a stable code, the HTTP status and a reason safe to show the client (never the
/// report's contents).
public struct ReportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes.
    public enum Code: String, Sendable {
        /// Not JSON, or not a JSON object where one is needed.
        case malformedJSON = "report.malformed-json"
        /// A field missing, of the wrong type, or out of range.
        case badField = "report.bad-field"
        /// The number is not E.164.
        case badNumber = "report.bad-number"
        /// The body is larger than the limit.
        case tooLarge = "report.too-large"
        /// The reporter credential is missing or not valid.
        case unauthenticated = "report.unauthenticated"
        /// The media type is not one the endpoint reads.
        case unsupportedMediaType = "report.unsupported-media-type"
    }

    /// The code.
    public let code: Code
    /// The reason.
    public let reason: String

    /// An error.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}
