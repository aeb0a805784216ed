/// Errors of Privacy Pass messages and operations (RFC 9577 / RFC 9578, token type 2).
public enum PrivacyPassError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A message has the wrong size or structure.
    case malformed(String)
    /// The token type is not 2 (blind RSA).
    case unsupportedTokenType(UInt16)
    /// The request names another issuer key than the one asked to sign.
    case wrongKeyID
    /// The token's signature does not verify.
    case invalidSignature
    /// A key could not be read or used.
    case invalidKey(String)

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed: \(why)"
        case .unsupportedTokenType(let t): return "unsupported token type \(t)"
        case .wrongKeyID: return "wrong token key id"
        case .invalidSignature: return "invalid signature"
        case .invalidKey(let why): return "invalid key: \(why)"
        }
    }
}
