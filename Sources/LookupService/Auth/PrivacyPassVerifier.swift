import Foundation
import LookupProtocol
import PrivacyPass

/// Verifies `Authorization: PrivateToken token=…` on the PIR endpoints (SPEC-PIR §7.3, §7.8): parses the token,
/// finds its issuer key among the accepted ones, checks the signature, and spends the nonce (a token is good
/// once). Answers 401 with the reference's reasons.
public struct PrivacyPassVerifier: PrivateTokenVerifier {
    let keys: IssuerKeyRing
    let nonces: any NonceStore

    /// A verifier over a key ring and a nonce store.
    public init(keys: IssuerKeyRing, nonces: any NonceStore) {
        self.keys = keys
        self.nonces = nonces
    }

    static let noToken = LookupError(.unauthorized, "No private token")
    static let failed = LookupError(.unauthorized, "Token did not pass verification")

    public func verify(authorization: String?) async throws -> String {
        guard let authorization, let encoded = Self.tokenParameter(authorization), let bytes = Base64URL.decode(encoded) else {
            throw Self.noToken
        }
        let token: Token
        do { token = try Token(deserialize: bytes) } catch PrivacyPassError.unsupportedTokenType { throw Self.failed } catch {
            throw Self.noToken
        }
        guard let (key, tier) = keys.acceptedKey(keyID: token.tokenKeyID) else {
            throw LookupError(.unauthorized, "No token key found with key id: \(token.tokenKeyID.hexString)")
        }
        guard key.verify(token), try await nonces.spend(nonce: token.nonce, keyID: token.tokenKeyID) else { throw Self.failed }
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
