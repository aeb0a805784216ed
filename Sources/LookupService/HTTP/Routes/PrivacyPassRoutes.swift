import Foundation
import Hummingbird
import NIOCore
import PrivacyPass
import ServiceCore

/// The token issuer's endpoints (SPEC-PIR §7.1, §7.8): the issuer directory, the token key of a user's tier,
/// and issuance. User tokens arrive as `Authorization: Bearer <user token>` and map to tiers by the config.
public enum PrivacyPassRoutes {
    /// Largest `/issue` body: a `TokenRequest` is 259 bytes.
    static let maxIssueBody = 4096

    /// Adds the issuer routes; `tierOf` maps a user token to its tier; `limiter` bounds issuance per user token.
    public static func add(to router: some RouterMethods<LookupRequestContext>, keys: IssuerKeyRing, limiter: IssuanceLimiter? = nil,
                           tierOf: @escaping @Sendable (String) -> String?) {
        router.get("/.well-known/private-token-issuer-directory") { _, _ -> Response in
            let entries = keys.published().map { published -> String in
                let notBefore = published.notBefore.map { ",\"not-before\":\(Int($0.timeIntervalSince1970))" } ?? ""
                return "{\"token-type\":\(TokenKey.tokenType),\"token-key\":\"\(Base64URL.encode(published.key.spki))\"\(notBefore)}"
            }
            let json = "{\"issuer-request-uri\":\"/issue\",\"token-keys\":[\(entries.joined(separator: ","))]}"
            return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: json)))
        }
        router.get("/token-key-for-user-token") { request, _ -> Response in
            let issuer = try issuerFor(request, keys: keys, tierOf: tierOf)
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: issuer.tokenKey.spki)))
        }
        router.post("/issue") { request, _ -> Response in
            let (issuer, userToken, tier) = try issuerAndToken(request, keys: keys, tierOf: tierOf)
            let body = try await LookupRoutes.body(request, limit: maxIssueBody)
            if let limiter, let wait = limiter.take(userToken: userToken, tier: tier) {
                throw LookupError.tooManyRequests("Token issuance rate exceeded for this user token", retryAfter: wait)
            }
            let tokenRequest: TokenRequest
            do { tokenRequest = try TokenRequest(deserialize: body) } catch {
                throw LookupError.badRequest("Invalid token request: \(error)")
            }
            let response: [UInt8]
            do { response = try issuer.issue(tokenRequest) } catch {
                throw LookupError(.unprocessableContent, "Token request refused: \(error)")
            }
            return Response(status: .ok, headers: [.contentType: "application/private-token-response"],
                            body: .init(byteBuffer: ByteBuffer(bytes: response)))
        }
    }

    static func issuerFor(_ request: Request, keys: IssuerKeyRing, tierOf: (String) -> String?) throws -> TokenIssuer {
        try issuerAndToken(request, keys: keys, tierOf: tierOf).issuer
    }

    static func issuerAndToken(_ request: Request, keys: IssuerKeyRing, tierOf: (String) -> String?) throws
        -> (issuer: TokenIssuer, userToken: String, tier: String) {
        let (userToken, tier) = try userToken(request, tierOf: tierOf)
        guard let issuer = keys.issuer(forTier: tier) else { throw LookupError(.unauthorized, "No issuer key for the user's tier") }
        return (issuer, userToken, tier)
    }

    /// The app's user token (`Authorization: Bearer <user token>`) and its tier; 401 when missing or unknown.
    static func userToken(_ request: Request, tierOf: (String) -> String?) throws -> (userToken: String, tier: String) {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw LookupError(.unauthorized, "Invalid or missing user token")
        }
        let userToken = String(header.dropFirst("Bearer ".count))
        guard let tier = tierOf(userToken) else { throw LookupError(.unauthorized, "Invalid or missing user token") }
        return (userToken, tier)
    }
}
