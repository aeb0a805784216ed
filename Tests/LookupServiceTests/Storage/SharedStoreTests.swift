import Crypto
import Foundation
import Logging
import LookupClient
import LookupProtocol
import LookupService
import LookupStorage
import PostgresNIO
import ServiceTestSupport
import Testing

/// Two services on one PostgreSQL, as two coordinators behind a load balancer: keys and spent tokens are shared,
/// secrets are sealed at rest, and losing the database gives 503 with `Retry-After`, never a token accepted
/// unrecorded.
@Suite("Shared PostgreSQL store")
struct SharedStoreTests {
    static let user = [("User-Identifier", "shared-store-user"), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 test")]

    @Test("A key uploaded through one service answers queries through the other; a token is spent once across both")
    func twoServicesShareKeysAndTokens() async throws {
        let (configs, data, database) = try await sharedStoreServices(count: 2)
        let a = try await TestServer.start(configPath: configs[0]), b = try await TestServer.start(configPath: configs[1])
        defer { Task { await a.stop(); await b.stop() } }
        #expect(a.server.sharedStore != nil && b.server.sharedStore != nil)
        // One issuer key ring for both, made once.
        #expect(a.server.privacyPass.keys?.liveKeyIDs == b.server.privacyPass.keys?.liveKeyIDs)
        #expect(a.server.privacyPass.keys?.liveKeyIDs.count == 2)  // tier1 and tier2

        // The device uploads its key through A (its first lookup) and then queries through B.
        let device = LookupDevice(http: a.http, userIdentifier: "shared-store-user",
                                  authorization: PrivacyPassAuthorization(issuer: a.http, userToken: "AAAA"))
        let blocked = try #require(data.records.first { $0.block })
        #expect(try await device.lookup(Array(blocked.number.utf8), in: DemoDataset.block) == blocked.blockValue)
        for record in data.records.prefix(6) {
            let keyword = Array(record.number.utf8)
            let request = try await device.queryRequest(keyword, in: DemoDataset.block)
            let answer = try await b.post("/queries", body: try request.serializedBytes(), headers: Self.user)
            #expect(answer.status == 200)
            #expect(try await device.decode(answer.body, keyword: keyword, in: DemoDataset.block) == record.blockValue)
        }

        // One token presented at A and at B at the same moment is accepted exactly once (20 trials here; the
        // netns test runs 100 across hosts).
        let tokens = PrivacyPassAuthorization(issuer: a.http, userToken: "AAAA")
        let configBody: [UInt8] = try ProtoConfigRequest.with { $0.usecases = [DemoDataset.block] }.serializedBytes()
        for trial in 0..<20 {
            let token = try #require(try await tokens.authorization())
            let headers = Self.user + [("Authorization", token)]
            async let atA = a.http.send(path: "/config", headers: headers, body: configBody)
            async let atB = b.http.send(path: "/config", headers: headers, body: configBody)
            let (answerA, answerB) = try await (atA, atB)
            let statuses: [Int] = [answerA.status, answerB.status].sorted()
            #expect(statuses == [200, 401], "trial \(trial): \(statuses)")
        }

        // At rest: no row holds the user identifier, the evaluation key or an issuer private key in clear.
        let uploaded = try await device.freshKeyUpload(for: DemoDataset.block)
        let (rows, issuerRows) = try await TestPostgres.withConnection(to: database) { connection -> (Int, Int) in
            var rows = 0
            for try await (tag, sealed) in try await connection.query("SELECT user_tag, sealed_key FROM evaluation_keys", logger: TestPostgres.logger)
                .decode((Data, Data).self) {
                rows += 1
                #expect(tag.count == 32 && !tag.elementsEqual(Data("shared-store-user".utf8)))
                #expect(sealed.range(of: Data("shared-store-user".utf8)) == nil)
                #expect(sealed.range(of: Data(uploaded.suffix(64))) == nil)
            }
            var issuerRows = 0
            for try await sealed in try await connection.query("SELECT sealed_key FROM rotating_keys WHERE ring = 'issuer'", logger: TestPostgres.logger).decode(Data.self) {
                issuerRows += 1
                #expect(sealed.range(of: Data("PRIVATE KEY".utf8)) == nil)
            }
            return (rows, issuerRows)
        }
        #expect(rows == 1)
        #expect(issuerRows == 2)
    }

    @Test("Losing PostgreSQL: 503 with Retry-After for what needs it, no token accepted unrecorded, cached keys still answer; recovery")
    func databaseLost() async throws {
        for privacyPass in [true, false] {
            let (configs, data, database) = try await sharedStoreServices(count: 1, privacyPass: privacyPass)
            let server = try await TestServer.start(configPath: configs[0])
            let device = server.device(userIdentifier: "shared-store-user")
            let record = data.records[3]
            #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == record.blockValue)

            // The database goes away: new connections refused, open ones terminated.
            func setReachable(_ reachable: Bool) async throws {
                try await TestPostgres.withConnection(to: database, database: "postgres") { admin in
                    try await admin.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(database.database) ALLOW_CONNECTIONS \(reachable)"),
                                          logger: TestPostgres.logger)
                    if !reachable {
                        try await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(database.database)",
                                              logger: TestPostgres.logger)
                    }
                }
            }
            try await setReachable(false)
            let keyword = Array(record.number.utf8)
            let request = try await device.queryRequest(keyword, in: DemoDataset.block)
            let started = ContinuousClock.now
            let answer = try await server.http.exchange(
                path: "/queries", headers: Self.user + (privacyPass ? [("Authorization", try #require(try await server.tokens?.authorization()))] : []),
                body: try request.serializedBytes())
            if privacyPass {
                // The token cannot be recorded as spent: refused with 503, not accepted.
                #expect(answer.status == 503)
                #expect(answer.headers.contains { $0.0.lowercased() == "retry-after" })
            } else {
                // No token to record: the key is in the cache, the answer is right.
                #expect(answer.status == 200)
                #expect(try await device.decode(answer.body, keyword: keyword, in: DemoDataset.block) == record.blockValue)
            }
            #expect(ContinuousClock.now - started < .seconds(5))
            // A key upload needs the database: 503 with Retry-After.
            let upload = try await server.http.exchange(
                path: "/key", headers: [("User-Identifier", "another-user"), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 test")]
                    + (privacyPass ? [("Authorization", try #require(try await server.tokens?.authorization()))] : []),
                body: try await device.freshKeyUpload(for: DemoDataset.block))
            #expect(upload.status == 503)
            #expect(upload.headers.contains { $0.0.lowercased() == "retry-after" })

            // The database is back: the same service answers again without a restart.
            try await setReachable(true)
            var recovered = false
            for _ in 0..<60 where !recovered {
                recovered = (try? await device.lookup(keyword, in: DemoDataset.block)) == record.blockValue
                if !recovered { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(recovered, "queries answer within 15 s of the database's return")
            await server.stop()
        }
    }
}

/// Issuer keys in the shared store: created and rotated once for every coordinator, sealed at rest.
@Suite("Shared issuer keys")
struct SharedIssuerKeyTests {
    @Test("Coordinators starting at once get one key per tier; a rotation is decided once and seen by all; a wrong key-encryption key is refused")
    func decidedOnce() async throws {
        let day = ManualClock.day
        let time = ManualClock()
        let clock = time.read
        let settings = try await TestPostgres.freshDatabase()
        let sealing = StoreSealing(keyEncryptionKey: SymmetricKey(size: .bits256))
        let stores = [try await PostgresStore.connect(settings, sealing: sealing, logger: Logger(label: "test")),
                      try await PostgresStore.connect(settings, sealing: sealing, logger: Logger(label: "test"))]
        let rings = [try IssuerKeyRing(lifetime: 10 * day, overlap: 2 * day, clock: clock),
                     try IssuerKeyRing(lifetime: 10 * day, overlap: 2 * day, clock: clock)]
        async let first = PostgresRotatingKeyStore<IssuerKeyKind>(store: stores[0]).ensure(rings[0], groups: ["tier1", "tier2"])
        async let second = PostgresRotatingKeyStore<IssuerKeyKind>(store: stores[1]).ensure(rings[1], groups: ["tier1", "tier2"])
        let changed = try await [first, second]
        #expect(changed.sorted { !$0 && $1 } == [false, true])  // exactly one made the keys
        #expect(rings[0].liveKeyIDs.count == 2)
        #expect(rings[0].liveKeyIDs == rings[1].liveKeyIDs)
        #expect(rings[0].issuer(forTier: "tier1")?.tokenKey.keyID == rings[1].issuer(forTier: "tier1")?.tokenKey.keyID)

        // Rotation time: the first to look decides; the other finds it made; both publish the successor.
        time.set(days: 6.5)
        #expect(try await PostgresRotatingKeyStore<IssuerKeyKind>(store: stores[1]).ensure(rings[1], groups: ["tier1", "tier2"]))
        #expect(try await !PostgresRotatingKeyStore<IssuerKeyKind>(store: stores[0]).ensure(rings[0], groups: ["tier1", "tier2"]))
        #expect(rings[0].published().map(\.key.keyID) == rings[1].published().map(\.key.keyID))
        #expect(rings[0].published().count == 4)

        // A coordinator with another key-encryption key cannot open the stored keys: refused, not used.
        let wrong = try await PostgresStore.connect(settings, sealing: StoreSealing(keyEncryptionKey: SymmetricKey(size: .bits256)),
                                                    logger: Logger(label: "test"))
        await #expect(throws: StoreError.self) { try await PostgresRotatingKeyStore<IssuerKeyKind>(store: wrong).refresh(try IssuerKeyRing(clock: clock)) }
        for store in stores + [wrong] { await store.shutdown() }
    }
}
