import Foundation
import LookupClient
import LookupProtocol
import LookupService
import ServiceTestSupport
import PrivacyPass
import Testing

/// Privacy Pass in the service: the issuer endpoints, token verification on the PIR endpoints with the
/// reference's status codes and reasons, double-spend refusal (also concurrent), persistence and rotation.
@Suite("Privacy Pass in the service")
struct PrivacyPassServiceTests {
    static let configBody: [UInt8] = (try? ProtoConfigRequest.with { $0.usecases = [DemoDataset.block] }.serializedBytes()) ?? []
    static let deviceHeaders = [("User-Identifier", "pp-test"), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 test")]

    static func start() async throws -> (TestServer, String) {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 60)
        let config = try writeServiceConfig(in: directory, usecases: data.useCases)
        return (try await TestServer.start(configPath: config), config)
    }

    func config(_ server: TestServer, authorization: String?, user: String? = nil) async throws -> (Int, String) {
        var headers = Self.deviceHeaders
        if let user { headers = headers.map { $0.0 == "User-Identifier" ? ($0.0, user) : $0 } }
        if let authorization { headers.append(("Authorization", authorization)) }
        let (status, body) = try await server.post("/config", body: Self.configBody, headers: headers, token: false)
        return (status, String(decoding: body, as: UTF8.self))
    }

    @Test("Directory, token key per tier, issuance; a fresh token is accepted once")
    func issuance() async throws {
        let (server, _) = try await Self.start()
        let (status, directory) = try await server.http.send(method: .GET, path: "/.well-known/private-token-issuer-directory", headers: [], body: nil)
        #expect(status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(directory)) as? [String: Any])
        #expect(json["issuer-request-uri"] as? String == "/issue")
        let keys = try #require(json["token-keys"] as? [[String: Any]])
        #expect(keys.count == 2 && keys.allSatisfy { $0["token-type"] as? Int == 2 })
        var spkis: [[UInt8]] = []
        for user in ["AAAA", "BBBB"] {
            let (s, spki) = try await server.http.send(method: .GET, path: "/token-key-for-user-token",
                                                       headers: [("Authorization", "Bearer \(user)")], body: nil)
            #expect(s == 200 && spki.count == 342)
            #expect(keys.contains { ($0["token-key"] as? String).flatMap { Base64URL.decode($0) } == spki })
            spkis.append(spki)
        }
        #expect(spkis[0] != spkis[1])
        for bad in [[("Authorization", "Bearer ZZZZ")], [("Authorization", "Basic AAAA")], []] {
            let (s, _) = try await server.http.send(method: .GET, path: "/token-key-for-user-token", headers: bad, body: nil)
            #expect(s == 401)
        }
        let token = try #require(try await server.tokens?.authorization())
        #expect(try await config(server, authorization: token).0 == 200)
        let (again, reason) = try await config(server, authorization: token)
        #expect(again == 401 && reason == "{\"error\":{\"message\":\"Token did not pass verification\"}}")
        await server.stop()
    }

    @Test("An upload declaring more than the route allows gets 413 before its token is looked at: the token stays unspent")
    func oversizedKeepsToken() async throws {
        let (server, _) = try await Self.start()
        let token = try #require(try await server.tokens?.authorization())
        let oversized = [UInt8](repeating: 0, count: server.server.api.maxKeyUploadBytes + 1)
        let (status, _) = try await server.post("/key", body: oversized, headers: Self.deviceHeaders + [("Authorization", token)], token: false)
        #expect(status == 413)
        #expect(try await config(server, authorization: token).0 == 200, "the refused upload did not spend the token")
        await server.stop()
    }

    @Test("Concurrent reuse of one token: exactly one request succeeds")
    func concurrentReuse() async throws {
        let (server, _) = try await Self.start()
        let token = try #require(try await server.tokens?.authorization())
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            // Eight users (one user's requests beyond 4 at once would get 429 before their token is looked at).
            for i in 0..<8 { group.addTask { try await self.config(server, authorization: token, user: "user-\(i)").0 } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 200 }.count == 1)
        #expect(statuses.filter { $0 == 401 }.count == 7)
        await server.stop()
    }

    @Test("Forged, unknown-key, wrong-type and malformed tokens get 401 with the reference's reasons")
    func refusals() async throws {
        let (server, _) = try await Self.start()
        let tokens = try #require(server.tokens)
        let fresh = try #require(try await tokens.authorization())
        let bytes = try #require(Base64URL.decode(fresh.dropFirst("PrivateToken token=".count)))
        var forged = bytes
        forged[200] ^= 0x01
        var wrongType = bytes
        wrongType[1] = 1
        let stranger = try TokenIssuer.generate()
        let client = TokenClient(tokenKey: stranger.tokenKey)
        let (request, pending) = try client.request(challenge: TokenChallenge(issuerName: "elsewhere"))
        let unknown = try client.finalize(response: try stranger.issue(request), pending: pending).serialize()
        let cases: [(String?, String)] = [
            (nil, "No private token"),
            ("Bearer AAAA", "No private token"),
            ("PrivateToken token=", "No private token"),
            ("PrivateToken token=***", "No private token"),
            ("PrivateToken token=" + Base64URL.encode(bytes.prefix(100)), "No private token"),
            ("PrivateToken token=" + Base64URL.encode(forged), "Token did not pass verification"),
            ("PrivateToken token=" + Base64URL.encode(wrongType), "Token did not pass verification"),
            ("PrivateToken token=" + Base64URL.encode(unknown), "No token key found with key id: "
                + stranger.tokenKey.keyID.map { String(format: "%02x", $0) }.joined()),
        ]
        for (header, reason) in cases {
            let (status, body) = try await config(server, authorization: header)
            #expect(status == 401 && body == "{\"error\":{\"message\":\"\(reason)\"}}", "\(header ?? "no header"): \(status) \(body)")
        }
        // The forged attempt did not spend the real token's nonce; the quoted form of RFC 9577 is accepted.
        #expect(try await config(server, authorization: "PrivateToken token=\"\(fresh.dropFirst("PrivateToken token=".count))\"").0 == 200)
        await server.stop()
    }

    @Test("/issue refuses bad token requests with 422, bad sizes with 400, bad user tokens with 401")
    func issueRefusals() async throws {
        let (server, _) = try await Self.start()
        let (_, spki) = try await server.http.send(method: .GET, path: "/token-key-for-user-token", headers: [("Authorization", "Bearer AAAA")], body: nil)
        let key = try TokenKey(spki: spki)
        let (good, _) = try TokenClient(tokenKey: key).request(challenge: TokenChallenge(issuerName: "callveil"))
        let bearer = [("Authorization", "Bearer AAAA")]
        let cases: [([(String, String)], [UInt8], Int)] = [
            (bearer, good.serialize(), 200),
            (bearer, TokenRequest(tokenType: 1, truncatedTokenKeyID: good.truncatedTokenKeyID, blindedMessage: good.blindedMessage).serialize(), 422),
            (bearer, TokenRequest(truncatedTokenKeyID: good.truncatedTokenKeyID &+ 1, blindedMessage: good.blindedMessage).serialize(), 422),
            (bearer, Array(good.serialize().prefix(200)), 422),
            (bearer, [0, 2], 400),
            ([("Authorization", "Bearer nope")], good.serialize(), 401),
            ([], good.serialize(), 401),
        ]
        for (headers, body, expected) in cases {
            let (status, answer) = try await server.http.send(path: "/issue", headers: headers, body: body)
            #expect(status == expected, "\(expected): got \(status) \(String(decoding: answer, as: UTF8.self))")
            if expected == 200 { #expect(answer.count == 256) }
        }
        await server.stop()
    }

    @Test("Issuer keys and spent nonces survive a restart")
    func restart() async throws {
        let (first, configPath) = try await Self.start()
        let tokens = try #require(first.tokens)
        let spent = try #require(try await tokens.authorization())
        let kept = try #require(try await tokens.authorization())
        #expect(try await config(first, authorization: spent).0 == 200)
        let (_, directoryBefore) = try await first.http.send(method: .GET, path: "/.well-known/private-token-issuer-directory", headers: [], body: nil)
        await first.stop()

        let second = try await TestServer.start(configPath: configPath)
        let (_, directoryAfter) = try await second.http.send(method: .GET, path: "/.well-known/private-token-issuer-directory", headers: [], body: nil)
        #expect(directoryBefore == directoryAfter)
        #expect(try await config(second, authorization: kept).0 == 200)
        #expect(try await config(second, authorization: spent).0 == 401)
        let keyDirectory = URL(fileURLWithPath: configPath).deletingLastPathComponent().appendingPathComponent("issuer-keys").path
        for file in try FileManager.default.contentsOfDirectory(atPath: keyDirectory) where file.hasSuffix(".pem") {
            let mode = try FileManager.default.attributesOfItem(atPath: "\(keyDirectory)/\(file)")[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600, "\(file)")
        }
        await second.stop()
    }

    @Test("Rotation publishes the successor before it issues, and the old key is accepted until it expires")
    func rotation() throws {
        let day = ManualClock.day
        let time = ManualClock()
        let clock = time.read
        let directory = try temporaryDirectory()
        let ring = try IssuerKeyRing(directory: directory, lifetime: 10 * day, overlap: 2 * day, clock: clock)
        #expect(try ring.ensure(tiers: ["tier1"]))
        let old = try #require(ring.issuer(forTier: "tier1"))
        time.set(days: 5)
        #expect(try !ring.ensure(tiers: ["tier1"]))
        time.set(days: 6.5)
        #expect(try ring.ensure(tiers: ["tier1"]))
        let published = ring.published()
        #expect(published.count == 2 && published[1].notBefore == time.start.addingTimeInterval(8 * day))
        let successor = published[1].key
        #expect(successor.truncatedKeyID != old.tokenKey.truncatedKeyID)
        #expect(ring.issuer(forTier: "tier1")?.tokenKey.keyID == old.tokenKey.keyID)
        #expect(ring.acceptedKey(keyID: successor.keyID) == nil)
        time.set(days: 8.5)
        #expect(ring.issuer(forTier: "tier1")?.tokenKey.keyID == successor.keyID)
        #expect(ring.acceptedKey(keyID: old.tokenKey.keyID)?.tier == "tier1")
        // Reloaded from disk, the ring is the same.
        let reloaded = try IssuerKeyRing(directory: directory, lifetime: 10 * day, overlap: 2 * day, clock: clock)
        #expect(reloaded.published().map(\.key.keyID) == ring.published().map(\.key.keyID))
        time.set(days: 10.5)
        #expect(ring.acceptedKey(keyID: old.tokenKey.keyID) == nil)
        #expect(try ring.ensure(tiers: ["tier1"]))
        #expect(ring.published().count == 1)
    }
}
