/// Errors converting wire messages into engine types: the message parsed, but its content is not acceptable.
public struct ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' `CertificateError`: compare codes, not messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case missingField, invalidField
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// A required field or oneof case is missing.
        public static let missingField = Code(.missingField)
        /// A field holds a value outside what the protocol allows.
        public static let invalidField = Code(.invalidField)
    }

    /// What went wrong.
    public let code: Code
    /// The reason, for logs and clients (never secrets).
    public let description: String

    private init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// A required field or oneof case is missing.
    public static func missingField(_ name: String) -> ProtocolError {
        ProtocolError(.missingField, "missing field: \(name)")
    }

    /// A field holds a value outside what the protocol allows.
    public static func invalidField(_ why: String) -> ProtocolError {
        ProtocolError(.invalidField, "invalid field: \(why)")
    }
}
