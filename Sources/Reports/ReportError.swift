import LookupEngine
import LookupStorage

/// Why a report is refused: a stable code, the HTTP status and a reason safe to show the client (never the
/// report's contents).
public struct ReportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' `CertificateError`: compare codes, not messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case malformedJSON = "report.malformed-json", badField = "report.bad-field", badNumber = "report.bad-number", tooLarge = "report.too-large", unauthenticated = "report.unauthenticated", unsupportedMediaType = "report.unsupported-media-type"
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// Not JSON, or not a JSON object where one is needed.
        public static let malformedJSON = Code(.malformedJSON)
        /// A field missing, of the wrong type, or out of range.
        public static let badField = Code(.badField)
        /// The number is not E.164.
        public static let badNumber = Code(.badNumber)
        /// The body is larger than the limit.
        public static let tooLarge = Code(.tooLarge)
        /// The reporter credential is missing or not valid.
        public static let unauthenticated = Code(.unauthenticated)
        /// The media type is not one the endpoint reads.
        public static let unsupportedMediaType = Code(.unsupportedMediaType)
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

    public var description: String { "\(code): \(reason)" }
}
