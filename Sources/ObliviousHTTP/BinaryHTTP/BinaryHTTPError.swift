/// A Binary HTTP message (RFC 9292) that cannot be read or written, with a stable code that callers map to an
/// answer (the gateway answers 400) and tests match on. Carries no message content.
public struct BinaryHTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' error codes: compare codes, not reasons.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, stable across releases.
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The message ends inside a length, a field or the content.
        public static let truncated = Code("truncated")
        /// The framing indicator is not one this message kind may have.
        public static let invalidFraming = Code("invalidFraming")
        /// A method, scheme, authority, path, status, field name or field value breaks HTTP's rules.
        public static let invalidControlData = Code("invalidControlData")
        /// A field name or value is not allowed (uppercase, pseudo-field, control characters).
        public static let invalidField = Code("invalidField")
        /// The message or one of its parts exceeds the configured limits.
        public static let tooLarge = Code("tooLarge")
        /// Bytes after the message are not all zero (padding must be).
        public static let nonZeroPadding = Code("nonZeroPadding")
    }

    /// What went wrong.
    public let code: Code
    /// A reason for logs (never message content).
    public let reason: String

    /// An error with a code and a reason.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "binary HTTP \(code): \(reason)" }
}
