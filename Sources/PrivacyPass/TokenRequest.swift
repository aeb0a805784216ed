/// `TokenRequest` (RFC 9578 §6.1): `token_type:u16 = 2 | truncated_token_key_id:u8 | blinded_msg[Nk]`.
public struct TokenRequest: Sendable, Equatable {
    /// Token type.
    public let tokenType: UInt16
    /// Last byte of the issuer key id.
    public let truncatedTokenKeyID: UInt8
    /// The blinded message (`Nk` = 256 bytes for RSA-2048).
    public let blindedMessage: [UInt8]

    /// A request.
    public init(tokenType: UInt16 = TokenKey.tokenType, truncatedTokenKeyID: UInt8, blindedMessage: [UInt8]) {
        self.tokenType = tokenType
        self.truncatedTokenKeyID = truncatedTokenKeyID
        self.blindedMessage = blindedMessage
    }

    /// Parses a request; only the length and structure are checked here (the issuer checks type, key and size).
    public init(deserialize bytes: [UInt8]) throws {
        guard bytes.count >= 3, bytes.count <= 3 + 1024 else { throw PrivacyPassError.malformed("TokenRequest of \(bytes.count) bytes") }
        tokenType = readU16(bytes[0...])
        truncatedTokenKeyID = bytes[2]
        blindedMessage = Array(bytes[3...])
    }

    /// The wire bytes.
    public func serialize() -> [UInt8] {
        var out: [UInt8] = []
        appendU16(tokenType, to: &out)
        out.append(truncatedTokenKeyID)
        return out + blindedMessage
    }
}
