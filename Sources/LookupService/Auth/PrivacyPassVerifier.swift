import Foundation
import LookupProtocol
import LookupStorage
import PrivacyPass
import ServiceCore

/// Verifies `Authorization: PrivateToken token=…` on the PIR endpoints (SPEC-PIR §7.3, §7.8): parses the token,
/// finds its issuer key among the accepted ones, checks the signature, and spends the nonce (a token is good once).
/// The challenge digest is checked only when issuer names are configured: which issuer name a device puts in its
/// `TokenChallenge` is not documented (the reference's test client says `test`), and the issuer key already binds
/// a token to this issuer, so by default any challenge is accepted, as the reference does. Answers 401 with the
/// reference's reasons.
public struct PrivacyPassVerifier: PrivateTokenVerifier {
    let keys: IssuerKeyRing
    let nonces: any NonceStore
    /// `challenge_digest` values accepted, one per configured issuer name; nil accepts any.
    let challengeDigests: Set<[UInt8]>?

    /// A verifier over a key ring and a nonce store. With `issuerNames`, only tokens whose challenge names one of
    /// them (token type 2, empty redemption context and origin info, as devices build it) are accepted; nil
    /// accepts any challenge.
    public init(keys: IssuerKeyRing, nonces: any NonceStore, issuerNames: [String]? = nil) {
        self.keys = keys
        self.nonces = nonces
        challengeDigests = issuerNames.map { Set($0.map { TokenChallenge(issuerName: $0).digest }) }
    }

    static let noToken = LookupError(.unauthorized, "No private token")
    static let failed = LookupError(.unauthorized, "Token did not pass verification")

    public func verify(authorization: String?) async throws -> String {
        guard let authorization, let encoded = Self.tokenParameter(authorization), let bytes = Base64URL.decode(encoded) else {
            throw Self.noToken
        }
        let token: Token
        do { token = try Token(deserialize: bytes) } catch let error as PrivacyPassError where error.code == .unsupportedTokenType { throw Self.failed } catch {
            throw Self.noToken
        }
        guard let (key, tier) = keys.acceptedKey(keyID: token.tokenKeyID) else {
            throw LookupError(.unauthorized, "No token key found with key id: \(token.tokenKeyID.hexString)")
        }
        guard challengeDigests?.contains(token.challengeDigest) ?? true, key.verify(token) else { throw Self.failed }
        let fresh: Bool
        do { fresh = try await nonces.spend(nonce: token.nonce, keyID: token.tokenKeyID) } catch is NonceStoreFull {
            throw LookupError.unavailable("This token key has reached its limit of spent tokens; fetch tokens of its successor", retryAfter: 60)
        }
        guard fresh else { throw Self.failed }
        return tier
    }

    /// The `token` parameter of a `PrivateToken` credential (RFC 9577 §2.2): scheme case-insensitive,
    /// comma-separated parameters, value optionally quoted.
    static func tokenParameter(_ header: String) -> Substring? {
        let trimmed = header.drop { $0 == " " }
        guard let space = trimmed.firstIndex(of: " "), trimmed[..<space].lowercased() == "privatetoken" else { return nil }
        for parameter in trimmed[space...].split(separator: ",") {
            let parts = parameter.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "token" else { continue }
            var value = Substring(parts[1].trimmingCharacters(in: .whitespaces))
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
            return value.isEmpty ? nil : value
        }
        return nil
    }
}
