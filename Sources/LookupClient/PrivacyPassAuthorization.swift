import Foundation
import PrivacyPass

/// Fetches Privacy Pass tokens like a device (SPEC-PIR §7.0, §7.8): reads the issuer directory, gets the token
/// key of its user token's tier (and checks the directory lists it), then issues tokens with
/// `POST /issue`, a fresh single-use token for every PIR request, a few at a time.
public actor PrivacyPassAuthorization: AuthorizationProvider {
    /// The issuer's HTTP client.
    public let issuer: LookupHTTPClient
    private let userToken: String
    private let issuerName: String
    private let batch: Int
    private var client: TokenClient?
    private var tokens: [Token] = []

    /// A provider with the app's user token (sent as `Bearer`); `batch` tokens are fetched per refill.
    public init(issuer: LookupHTTPClient, userToken: String, issuerName: String = "callveil", batch: Int = 4) {
        self.issuer = issuer
        self.userToken = userToken
        self.issuerName = issuerName
        self.batch = max(batch, 1)
    }

    public func authorization() async throws -> String? {
        if tokens.isEmpty { try await refill() }
        return "PrivateToken token=" + Base64URL.encode(tokens.removeFirst().serialize())
    }

    /// The issuer key in use (after the first token).
    public var tokenKey: TokenKey? { client?.tokenKey }

    /// Issues tokens until `count` are held, so the requests that spend them later cost the issuer nothing then (a
    /// load tool's flood brings tokens minted earlier, as a real one would).
    public func stock(_ count: Int) async throws {
        while tokens.count < count { try await refill() }
    }

    func refill() async throws {
        let client: TokenClient
        if let existing = self.client {
            client = existing
        } else {
            client = try await fetchKey()
            self.client = client
        }
        for _ in 0..<batch {
            let (request, pending) = try client.request(challenge: TokenChallenge(issuerName: issuerName))
            let (status, headers, body) = try await issuer.exchange(path: "/issue", headers: [("Authorization", "Bearer \(userToken)")],
                                                                    body: request.serialize())
            guard status == 200 else { throw LookupClientError.answer(status: status, headers: headers, body: body) }
            tokens.append(try client.finalize(response: body, pending: pending))
        }
    }

    func fetchKey() async throws -> TokenClient {
        let (dirStatus, directory) = try await issuer.send(method: .GET, path: "/.well-known/private-token-issuer-directory",
                                                           headers: [], body: nil)
        guard dirStatus == 200,
              let json = try JSONSerialization.jsonObject(with: Data(directory)) as? [String: Any],
              let keys = json["token-keys"] as? [[String: Any]] else {
            throw LookupClientError.protocolViolation("unreadable issuer directory (HTTP \(dirStatus))")
        }
        let (status, spki) = try await issuer.send(method: .GET, path: "/token-key-for-user-token",
                                                   headers: [("Authorization", "Bearer \(userToken)")], body: nil)
        guard status == 200 else { throw LookupClientError.http(status: status, body: String(decoding: spki, as: UTF8.self)) }
        let listed = keys.contains { ($0["token-key"] as? String).flatMap { Base64URL.decode($0) } == spki && $0["not-before"] == nil }
        guard listed else { throw LookupClientError.protocolViolation("the user's token key is not an active key of the issuer directory") }
        return TokenClient(tokenKey: try TokenKey(spki: spki))
    }
}
