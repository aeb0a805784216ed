import Crypto

/// `TokenChallenge` (RFC 9577 §2.1): what a token is bound to. Apple's client builds it itself with token type
/// 2, the issuer name, and empty redemption context and origin info.
public struct TokenChallenge: Sendable, Equatable {
    /// Token type (2).
    public var tokenType: UInt16
    /// Issuer name.
    public var issuerName: String
    /// Redemption context: empty or 32 bytes.
    public var redemptionContext: [UInt8]
    /// Origin info (comma-separated origin names), often empty.
    public var originInfo: String

    /// A challenge.
    public init(tokenType: UInt16 = TokenKey.tokenType, issuerName: String, redemptionContext: [UInt8] = [], originInfo: String = "") {
        self.tokenType = tokenType
        self.issuerName = issuerName
        self.redemptionContext = redemptionContext
        self.originInfo = originInfo
    }

    /// `token_type:u16 | issuer_name<1..2^16-1> | redemption_context<0..32> | origin_info<0..2^16-1>`.
    public func serialize() -> [UInt8] {
        var out: [UInt8] = []
        appendU16(tokenType, to: &out)
        appendU16(UInt16(issuerName.utf8.count), to: &out)
        out += issuerName.utf8
        out.append(UInt8(redemptionContext.count))
        out += redemptionContext
        appendU16(UInt16(originInfo.utf8.count), to: &out)
        out += originInfo.utf8
        return out
    }

    /// `SHA-256(serialize())`: the `challenge_digest` a token for this challenge carries.
    public var digest: [UInt8] { Array(SHA256.hash(data: serialize())) }
}

func appendU16(_ v: UInt16, to out: inout [UInt8]) {
    out.append(UInt8(v >> 8))
    out.append(UInt8(v & 0xff))
}

func readU16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
    UInt16(bytes[bytes.startIndex]) << 8 | UInt16(bytes[bytes.startIndex + 1])
}
