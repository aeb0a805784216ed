import Crypto
import Foundation
import _CryptoExtras

/// An issuer's public key for token type 2 (blind RSA, RSABSSA-SHA384-PSS-Deterministic) with its wire form:
/// the DER SubjectPublicKeyInfo whose algorithm is id-RSASSA-PSS with SHA-384, MGF1-SHA-384 and salt 48
/// (RFC 9578 §6.5), the key id `SHA256(SPKI)` and its last byte, the truncated key id.
public struct TokenKey: Sendable {
    /// Token type 2: publicly verifiable, blind RSA.
    public static let tokenType: UInt16 = 2
    /// `Nk`: the RSA-2048 modulus size in bytes.
    public static let modulusBytes = 256

    /// The algorithm identifier of the SPKI: id-RSASSA-PSS with its SHA-384 parameters (no NULL after the hash OIDs).
    static let algorithmIdentifier: [UInt8] = [
        0x30, 0x3d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a, 0x30, 0x30, 0xa0, 0x0d, 0x30, 0x0b, 0x06,
        0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0xa1, 0x1a, 0x30, 0x18, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86,
        0xf7, 0x0d, 0x01, 0x01, 0x08, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0xa2, 0x03,
        0x02, 0x01, 0x30,
    ]

    /// The key.
    public let publicKey: _RSA.BlindSigning.PublicKey<SHA384>
    /// The SPKI bytes devices receive.
    public let spki: [UInt8]
    /// `SHA256(spki)`.
    public let keyID: [UInt8]

    /// The last byte of the key id.
    public var truncatedKeyID: UInt8 { keyID[31] }

    /// The token key of an RSA-2048 public key.
    public init(_ publicKey: _RSA.BlindSigning.PublicKey<SHA384>) throws {
        guard publicKey.keySizeInBits == Self.modulusBytes * 8 else {
            throw PrivacyPassError.invalidKey("\(publicKey.keySizeInBits)-bit key; token type 2 uses 2048 bits")
        }
        self.publicKey = publicKey
        let bitString = DER.encode(tag: 0x03, [0x00] + [UInt8](publicKey.pkcs1DERRepresentation))
        spki = DER.encode(tag: 0x30, Self.algorithmIdentifier + bitString)
        keyID = Array(SHA256.hash(data: spki))
    }

    /// Parses an RSASSA-PSS SubjectPublicKeyInfo (the form `/token-key-for-user-token` sends).
    public init(spki bytes: [UInt8]) throws {
        let outer = try DER.read(bytes[...], at: 0)
        guard outer.tag == 0x30, outer.end == bytes.count else { throw PrivacyPassError.invalidKey("not a DER SEQUENCE") }
        let algorithm = try DER.read(outer.content, at: outer.content.startIndex)
        guard Array(bytes[outer.content.startIndex..<algorithm.end]) == Self.algorithmIdentifier else {
            throw PrivacyPassError.invalidKey("not an RSASSA-PSS SHA-384 key")
        }
        let bitString = try DER.read(outer.content, at: algorithm.end)
        guard bitString.tag == 0x03, bitString.end == outer.content.endIndex, bitString.content.first == 0 else {
            throw PrivacyPassError.invalidKey("bad subjectPublicKey")
        }
        let rsa = try DER.read(bitString.content, at: bitString.content.startIndex + 1)
        let n = try DER.read(rsa.content, at: rsa.content.startIndex)
        let e = try DER.read(rsa.content, at: n.end)
        guard rsa.tag == 0x30, n.tag == 0x02, e.tag == 0x02, e.end == rsa.content.endIndex else {
            throw PrivacyPassError.invalidKey("bad RSAPublicKey")
        }
        let modulus = Array(n.content.drop { $0 == 0 })
        let key: _RSA.BlindSigning.PublicKey<SHA384>
        do {
            key = try _RSA.BlindSigning.PublicKey(n: modulus, e: Array(e.content), parameters: .RSABSSA_SHA384_PSS_Deterministic)
        } catch {
            throw PrivacyPassError.invalidKey("\(error)")
        }
        try self.init(key)
        guard spki == bytes else { throw PrivacyPassError.invalidKey("non-canonical SPKI encoding") }
    }

    /// Whether the token's authenticator is a valid signature by this key over its token input, and the token
    /// names this key.
    public func verify(_ token: Token) -> Bool {
        guard token.tokenType == Self.tokenType, token.tokenKeyID == keyID,
              token.authenticator.count == Self.modulusBytes else { return false }
        let message = publicKey.prepare(token.tokenInput)
        return publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: token.authenticator), for: message)
    }
}
