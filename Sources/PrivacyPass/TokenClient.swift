import Crypto
import Foundation
import _CryptoExtras

/// The client side of issuance (RFC 9578 §6.1, §6.3): builds a blinded `TokenRequest` for a challenge and
/// finalizes the issuer's `TokenResponse` into a `Token`.
public struct TokenClient: Sendable {
    /// The issuer's key.
    public let tokenKey: TokenKey

    /// A client for an issuer key.
    public init(tokenKey: TokenKey) {
        self.tokenKey = tokenKey
    }

    /// What the client keeps between request and response.
    public struct Pending {
        let nonce: [UInt8]
        let challengeDigest: [UInt8]
        let message: [UInt8]
        let inverse: _RSA.BlindSigning.BlindingInverse
    }

    /// A request for one token bound to `challenge`.
    public func request(challenge: TokenChallenge) throws -> (request: TokenRequest, pending: Pending) {
        var rng = SystemRandomNumberGenerator()
        let nonce = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let digest = challenge.digest
        let input = Token(nonce: nonce, challengeDigest: digest, tokenKeyID: tokenKey.keyID, authenticator: []).tokenInput
        let blinded = try tokenKey.publicKey.blind(tokenKey.publicKey.prepare(input))
        return (TokenRequest(truncatedTokenKeyID: tokenKey.truncatedKeyID, blindedMessage: [UInt8](blinded.blindedMessage)),
                Pending(nonce: nonce, challengeDigest: digest, message: input, inverse: blinded.inverse))
    }

    /// The token from the issuer's response.
    public func finalize(response: [UInt8], pending: Pending) throws -> Token {
        guard response.count == TokenKey.modulusBytes else { throw PrivacyPassError.malformed("TokenResponse of \(response.count) bytes") }
        let signature = try tokenKey.publicKey.finalize(_RSA.BlindSigning.BlindSignature(rawRepresentation: response),
                                                        for: tokenKey.publicKey.prepare(pending.message),
                                                        blindingInverse: pending.inverse)
        return Token(nonce: pending.nonce, challengeDigest: pending.challengeDigest, tokenKeyID: tokenKey.keyID,
                     authenticator: [UInt8](signature.rawRepresentation))
    }
}
