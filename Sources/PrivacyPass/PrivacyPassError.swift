/// Errors of Privacy Pass messages and operations (RFC 9577 / RFC 9578, token type 2).
public struct PrivacyPassError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' `CertificateError`: compare codes, not messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case malformed, unsupportedTokenType, wrongKeyID, invalidSignature, invalidKey
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// A message has the wrong size or structure.
        public static let malformed = Code(.malformed)
        /// The token type is not 2 (blind RSA).
        public static let unsupportedTokenType = Code(.unsupportedTokenType)
        /// The request names another issuer key than the one asked to sign.
        public static let wrongKeyID = Code(.wrongKeyID)
        /// The token's signature does not verify.
        public static let invalidSignature = Code(.invalidSignature)
        /// A key could not be read or used.
        public static let invalidKey = Code(.invalidKey)
    }

    /// What went wrong.
    public let code: Code
    /// The reason, for logs and clients (never secrets).
    public let description: String

    private init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// A message has the wrong size or structure.
    public static func malformed(_ why: String) -> PrivacyPassError {
        PrivacyPassError(.malformed, "malformed: \(why)")
    }

    /// The token type is not 2 (blind RSA).
    public static func unsupportedTokenType(_ t: UInt16) -> PrivacyPassError {
        PrivacyPassError(.unsupportedTokenType, "unsupported token type \(t)")
    }

    /// The request names another issuer key than the one asked to sign.
    public static let wrongKeyID = PrivacyPassError(.wrongKeyID, "wrong token key id")

    /// The token's signature does not verify.
    public static let invalidSignature = PrivacyPassError(.invalidSignature, "invalid signature")

    /// A key could not be read or used.
    public static func invalidKey(_ why: String) -> PrivacyPassError {
        PrivacyPassError(.invalidKey, "invalid key: \(why)")
    }
}
