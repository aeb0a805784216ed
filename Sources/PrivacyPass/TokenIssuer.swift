import Crypto
import Foundation
import _CryptoExtras

/// Signs token requests with an issuer private key (RFC 9578 §6.2): checks token type, truncated key id and
/// blinded-message size, then returns the 256-byte blind signature (the `TokenResponse`). Deterministic.
public struct TokenIssuer: Sendable {
    /// The private key.
    public let privateKey: _RSA.BlindSigning.PrivateKey<SHA384>
    /// Its public token key.
    public let tokenKey: TokenKey

    /// An issuer for a key.
    public init(privateKey: _RSA.BlindSigning.PrivateKey<SHA384>) throws {
        self.privateKey = privateKey
        self.tokenKey = try TokenKey(privateKey.publicKey)
    }

    /// A fresh RSA-2048 issuer key.
    public static func generate() throws -> TokenIssuer {
        try TokenIssuer(privateKey: try _RSA.BlindSigning.PrivateKey(keySize: .bits2048, parameters: .RSABSSA_SHA384_PSS_Deterministic))
    }

    /// An issuer from a PEM private key (PKCS#1 or PKCS#8).
    public init(pem: String) throws {
        do {
            try self.init(privateKey: try _RSA.BlindSigning.PrivateKey(pemRepresentation: pem, parameters: .RSABSSA_SHA384_PSS_Deterministic))
        } catch let error as PrivacyPassError {
            throw error
        } catch {
            throw PrivacyPassError.invalidKey("\(error)")
        }
    }

    /// The PEM form of the private key, for storage.
    public var pem: String { privateKey.pemRepresentation }

    /// The `TokenResponse` for a request.
    public func issue(_ request: TokenRequest) throws -> [UInt8] {
        guard request.tokenType == TokenKey.tokenType else { throw PrivacyPassError.unsupportedTokenType(request.tokenType) }
        guard request.truncatedTokenKeyID == tokenKey.truncatedKeyID else { throw PrivacyPassError.wrongKeyID }
        guard request.blindedMessage.count == TokenKey.modulusBytes else {
            throw PrivacyPassError.malformed("blinded message of \(request.blindedMessage.count) bytes")
        }
        do {
            return [UInt8](try privateKey.blindSignature(for: request.blindedMessage).rawRepresentation)
        } catch {
            throw PrivacyPassError.malformed("blinded message out of range")
        }
    }
}
