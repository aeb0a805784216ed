import Foundation
import LookupClient
import LookupProtocol
import LookupService
import PrivacyPass
import ServiceCore
import ServiceTestSupport
import Synchronization
import Testing

/// Privacy Pass under abuse: oversized issuance bodies, issuance floods from one user token, tokens minted for
/// another issuer name (the nonce stores themselves: NonceStoreTests).
@Suite("Privacy Pass limits")
struct PrivacyPassLimitsTests {
    static let deviceHeaders = [("User-Identifier", "pp-limits"), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 test")]

    static func start(edit: (inout ServiceConfig) -> Void = { _ in }) async throws -> TestServer {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 40)
        return try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases, edit: edit))
    }

    @Test("/issue: 413 for a body over 4 KiB; a tier's rate answers 429 with Retry-After")
    func issueLimits() async throws {
        let server = try await Self.start { config in
            config.users[1].issuePerSecond = 0.1  // tier2 (BBBB): a burst of 3, then one every 10 s (slow enough for a loaded machine)
            config.users[1].issueBurst = 3
        }
        let key = try TokenKey(spki: try await server.http.send(method: .GET, path: "/token-key-for-user-token",
                                                                headers: [("Authorization", "Bearer BBBB")], body: nil).body)
        let oversized = [UInt8](repeating: 7, count: 5000)
        let (status, body) = try await server.http.send(path: "/issue", headers: [("Authorization", "Bearer AAAA")], body: oversized)
        #expect(status == 413 && String(decoding: body, as: UTF8.self).contains("exceeds 4096 bytes"))
        var statuses: [Int] = []
        var retryAfter: [String] = []
        for _ in 0..<5 {
            let (request, _) = try TokenClient(tokenKey: key).request(challenge: TokenChallenge(issuerName: "callveil"))
            let answer = try await server.http.exchange(path: "/issue", headers: [("Authorization", "Bearer BBBB")], body: request.serialize())
            statuses.append(answer.status)
            retryAfter += answer.headers.filter { $0.0.lowercased() == "retry-after" }.map(\.1)
        }
        #expect(statuses == [200, 200, 200, 429, 429], "\(statuses)")
        #expect(retryAfter.count == 2 && retryAfter.allSatisfy { (Int($0) ?? 0) >= 1 && (Int($0) ?? 0) <= 10 })
        // Another user token of a tier without a rate is not limited.
        for _ in 0..<5 { _ = try #require(try await server.tokens?.authorization()) }
        await server.stop()
    }

    @Test("Token buckets: refill at the tier's rate, capped at the burst; unknown tiers unlimited")
    func limiter() {
        let now = Mutex(ContinuousClock.now)
        let limiter = IssuanceLimiter(rates: ["t": .init(perSecond: 2, burst: 4)], clock: { now.withLock { $0 } })
        #expect((0..<4).allSatisfy { _ in limiter.take(userToken: "a", tier: "t") == nil })
        #expect(limiter.take(userToken: "a", tier: "t") == 1)
        #expect(limiter.take(userToken: "b", tier: "t") == nil)  // per user token
        now.withLock { $0 += .milliseconds(500) }  // one token back
        #expect(limiter.take(userToken: "a", tier: "t") == nil)
        #expect(limiter.take(userToken: "a", tier: "t") != nil)
        now.withLock { $0 += .seconds(60) }  // full again, not more
        #expect((0..<4).allSatisfy { _ in limiter.take(userToken: "a", tier: "t") == nil })
        #expect(limiter.take(userToken: "a", tier: "t") != nil)
        #expect((0..<100).allSatisfy { _ in limiter.take(userToken: "a", tier: "other") == nil })
    }

    @Test("By default any challenge is accepted (the reference's client says `test`); a configured list refuses other issuer names")
    func challengeDigest() async throws {
        let everyName = ["callveil", "test", "elsewhere", "lookup.example.net", "other"]
        for (names, accepted) in [(nil, everyName), (["lookup.example.net", "other"], ["lookup.example.net", "other"])] as [([String]?, [String])] {
            let server = try await Self.start { $0.privacyPass?.issuerNames = names }
            for name in everyName {
                let auth = PrivacyPassAuthorization(issuer: server.http, userToken: "AAAA", issuerName: name, batch: 1)
                let token = try #require(try await auth.authorization())
                let body: [UInt8] = try ProtoConfigRequest.with { $0.usecases = [DemoDataset.block] }.serializedBytes()
                let (status, reason) = try await server.post("/config", body: body, headers: Self.deviceHeaders + [("Authorization", token)], token: false)
                if accepted.contains(name) {
                    #expect(status == 200, "\(name) with names \(names ?? ["default"])")
                } else {
                    #expect(status == 401 && String(decoding: reason, as: UTF8.self).contains("Token did not pass verification"), "\(name)")
                }
            }
            await server.stop()
        }
    }
}
