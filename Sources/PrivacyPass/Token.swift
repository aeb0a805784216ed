/// `Token` (RFC 9577 §2.2, type 2): `token_type:u16 | nonce[32] | challenge_digest[32] | token_key_id[32] |
/// authenticator[Nk]`. The authenticator is an RSASSA-PSS (SHA-384) signature over the first 98 bytes.
public struct Token: Sendable, Equatable {
    /// Token type.
    public let tokenType: UInt16
    /// Client nonce; a token is spent once per nonce.
    public let nonce: [UInt8]
    /// SHA-256 of the `TokenChallenge`.
    public let challengeDigest: [UInt8]
    /// SHA-256 of the issuer key's SPKI.
    public let tokenKeyID: [UInt8]
    /// The signature.
    public let authenticator: [UInt8]

    /// A token.
    public init(tokenType: UInt16 = TokenKey.tokenType, nonce: [UInt8], challengeDigest: [UInt8], tokenKeyID: [UInt8], authenticator: [UInt8]) {
        self.tokenType = tokenType
        self.nonce = nonce
        self.challengeDigest = challengeDigest
        self.tokenKeyID = tokenKeyID
        self.authenticator = authenticator
    }

    /// Parses a type-2 token of `2 + 96 + 256` bytes.
    public init(deserialize bytes: [UInt8]) throws {
        guard bytes.count >= 2 else { throw PrivacyPassError.malformed("token of \(bytes.count) bytes") }
        let type = readU16(bytes[0...])
        guard type == TokenKey.tokenType else { throw PrivacyPassError.unsupportedTokenType(type) }
        guard bytes.count == 2 + 96 + TokenKey.modulusBytes else { throw PrivacyPassError.malformed("token of \(bytes.count) bytes") }
        tokenType = type
        nonce = Array(bytes[2..<34])
        challengeDigest = Array(bytes[34..<66])
        tokenKeyID = Array(bytes[66..<98])
        authenticator = Array(bytes[98...])
    }

    /// The signed part: `token_type | nonce | challenge_digest | token_key_id`.
    public var tokenInput: [UInt8] {
        var out: [UInt8] = []
        appendU16(tokenType, to: &out)
        return out + nonce + challengeDigest + tokenKeyID
    }

    /// The wire bytes.
    public func serialize() -> [UInt8] { tokenInput + authenticator }
}
