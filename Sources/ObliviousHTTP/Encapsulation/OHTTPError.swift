/// An Oblivious HTTP message (RFC 9458) that cannot be used, with a stable code. A gateway maps the codes to its
/// answers (a key problem to the `ohttp-key` problem type); none carries message content or key material.
public struct OHTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' error codes: compare codes, not reasons.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, stable across releases.
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A key configuration (or a list of them) does not parse.
        public static let invalidKeyConfig = Code("invalidKeyConfig")
        /// The request names a key identifier the gateway does not hold.
        public static let unknownKeyID = Code("unknownKeyID")
        /// The request names a KEM, KDF or AEAD its key configuration does not offer (or this build lacks).
        public static let unsupportedCipherSuite = Code("unsupportedCipherSuite")
        /// The message is too short to hold its header, encapsulated key and tag.
        public static let invalidMessage = Code("invalidMessage")
        /// Decryption failed: wrong key, tampered, or not meant for this exchange.
        public static let decryptionFailed = Code("decryptionFailed")
        /// The message exceeds the configured size.
        public static let messageTooLarge = Code("messageTooLarge")
    }

    /// What went wrong.
    public let code: Code
    /// A reason for logs.
    public let reason: String

    /// An error with a code and a reason.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "oblivious HTTP \(code): \(reason)" }
}
