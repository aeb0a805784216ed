import Crypto
import Foundation
import Gateway
import LookupClient
import LookupProtocol
import LookupService
import Hummingbird
import LookupEngine
import LookupStorage
import NIOEmbedded
import ObliviousHTTP
import ServiceCore
import ServiceTestSupport
import ServiceLifecycle
import Testing

/// The gateway's keys: files, rotation, expiry, and the keys and replay record shared through PostgreSQL.
extension ObliviousGatewayTests {
    @Test("Keys: files 0600 that survive a restart; a successor published before the old key ends; the old key accepted until then")
    func rotation() throws {
        let day = ManualClock.day
        let time = ManualClock()
        let clock = time.read
        let directory = try temporaryDirectory() + "/gateway-keys"
        let ring = try GatewayKeyRing(directory: directory, lifetime: 10 * day, overlap: 2 * day, clock: clock)
        #expect(ring.gateway == nil)
        #expect(try ring.ensure())
        #expect(try !ring.ensure())
        let first = try #require(ring.entries.first)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".x25519") }
        #expect(files.count == 1)
        let mode = try FileManager.default.attributesOfItem(atPath: "\(directory)/\(files[0])")[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // Reopened: the same key.
        let reopened = try GatewayKeyRing(directory: directory, lifetime: 10 * day, overlap: 2 * day, clock: clock)
        #expect(reopened.publishedConfigs == ring.publishedConfigs)
        let request = try OHTTPClientRequest(try BinaryHTTPRequest(method: "GET", path: "/").encoded(),
                                             config: try #require(try OHTTPKeyConfig.decodeList(ring.publishedConfigs).first))
        #expect(throws: Never.self) { try reopened.gateway?.decapsulate(request.encapsulated) }

        // Rotation due: a successor with the next id is published first; the old key still opens requests.
        time.set(days: 8.5)
        #expect(try ring.ensure())
        let published = try OHTTPKeyConfig.decodeList(ring.publishedConfigs)
        #expect(published.map(\.keyID) == [first.key.keyID &+ 1, first.key.keyID])
        #expect(throws: Never.self) { try ring.gateway?.decapsulate(request.encapsulated) }

        // The old key's end: refused at once (before the maintenance pass drops it), then dropped; its requests get
        // the key-configuration problem.
        time.set(days: 10.5)
        #expect(ring.hasExpired(keyID: first.key.keyID) && !ring.hasExpired(keyID: first.key.keyID &+ 1))
        #expect(try ring.ensure())
        #expect(try OHTTPKeyConfig.decodeList(ring.publishedConfigs).map(\.keyID) == [first.key.keyID &+ 1])
        #expect(throws: OHTTPError.self) { try ring.gateway?.decapsulate(request.encapsulated) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".x25519") }.count == 1)

        // A forced rotation keeps the current key for the overlap only.
        try ring.rotate()
        let entries = ring.entries
        #expect(entries.count == 2 && entries[0].notAfter == time.now.addingTimeInterval(2 * day))  // oldest first
    }

    @Test("A key past its notAfter is refused when a request arrives, not only after the maintenance pass drops it")
    func expiredKeyRefused() async throws {
        let day = ManualClock.day
        let time = ManualClock()
        let ring = try GatewayKeyRing(directory: try temporaryDirectory() + "/gateway-keys", lifetime: 10 * day, overlap: 2 * day, clock: time.read)
        try ring.ensure()
        let router = Router(context: LookupRequestContext.self)
        router.post("/config") { _, _ -> Response in Response(status: .ok) }
        let gateway = ObliviousGateway(keys: ring, replay: GatewayReplayCache(clock: time.read),
                                       target: InProcessGatewayTarget(router: router, logger: TestServer.logger), metrics: ServiceMetrics(),
                                       logger: TestServer.logger)
        let context = LookupRequestContext(source: .init(channel: EmbeddedChannel(), logger: TestServer.logger))
        let config = try #require(try OHTTPKeyConfig.decodeList(ring.publishedConfigs).first)
        let fresh = try OHTTPClientRequest(try Self.configRequest(token: nil), config: config)
        #expect(await gateway.handle(fresh.encapsulated, contentType: ObliviousGateway.requestMediaType, context: context).status == 200)
        // A client that cached the configuration sends after the key's end; the hourly pass has not run yet.
        let late = try OHTTPClientRequest(try Self.configRequest(token: nil), config: config)
        time.set(days: 10.5)
        let answer = await gateway.handle(late.encapsulated, contentType: ObliviousGateway.requestMediaType, context: context)
        #expect(answer.status == 400 && Self.problemType(answer.body) == "https://iana.org/assignments/http-problem-types#ohttp-key",
                "a request to an expired key: \(answer.status)")
    }

    @Test("Keys in PostgreSQL: two gateways starting at once share one key; a rotation is decided once and seen by both")
    func sharedKeys() async throws {
        let day = ManualClock.day
        let time = ManualClock()
        let clock = time.read
        let settings = try await TestPostgres.freshDatabase()
        let sealing = StoreSealing(keyEncryptionKey: SymmetricKey(size: .bits256))
        let stores = [try await PostgresStore.connect(settings, sealing: sealing, logger: TestPostgres.logger),
                      try await PostgresStore.connect(settings, sealing: sealing, logger: TestPostgres.logger)]
        let rings = [try GatewayKeyRing(directory: nil, lifetime: 10 * day, overlap: 2 * day, clock: clock),
                     try GatewayKeyRing(directory: nil, lifetime: 10 * day, overlap: 2 * day, clock: clock)]
        async let a = rings[0].ensure(sharedStore: stores[0])
        async let b = rings[1].ensure(sharedStore: stores[1])
        let changed = try await [a, b]
        #expect(changed.filter { $0 }.count == 1)
        #expect(!rings[0].publishedConfigs.isEmpty && rings[0].publishedConfigs == rings[1].publishedConfigs)
        // A request to one gateway's key opens at the other.
        let request = try OHTTPClientRequest(try BinaryHTTPRequest(method: "GET", path: "/").encoded(),
                                             config: try #require(try OHTTPKeyConfig.decodeList(rings[0].publishedConfigs).first))
        #expect(throws: Never.self) { try rings[1].gateway?.decapsulate(request.encapsulated) }

        time.set(days: 8.5)
        #expect(try await rings[1].ensure(sharedStore: stores[1]))
        #expect(try await !rings[0].ensure(sharedStore: stores[0]))
        #expect(rings[0].publishedConfigs == rings[1].publishedConfigs)
        #expect(try OHTTPKeyConfig.decodeList(rings[0].publishedConfigs).count == 2)

        // Sealed at rest: the stored bytes are not the private key.
        let stored = try await TestPostgres.withConnection(to: settings) { connection -> [Data] in
            var rows: [Data] = []
            for try await sealed in try await connection.query("SELECT sealed_key FROM rotating_keys WHERE ring = 'gateway'", logger: TestPostgres.logger).decode(Data.self) {
                rows.append(sealed)
            }
            return rows
        }
        let privateKeys = Set(rings[0].entries.map { Data($0.key.privateKey.rawRepresentation) })
        #expect(stored.count == 2 && stored.allSatisfy { sealed in !privateKeys.contains { sealed.range(of: $0) != nil } })
        for store in stores { await store.shutdown() }
    }

    @Test("Keys in PostgreSQL: a request opened at one gateway is refused as a replay at another; the shared record forgets it after the window")
    func sharedReplay() async throws {
        let (configs, _, database) = try await sharedStoreServices(count: 2)
        for path in configs {
            var config = try ServiceConfig.load(path: path)
            config.gateway = .init()
            try JSONEncoder().encode(config).write(to: URL(fileURLWithPath: path))
        }
        let servers = [try await TestServer.start(configPath: configs[0]), try await TestServer.start(configPath: configs[1])]
        let published = [try await servers[0].http.send(method: .GET, path: "/ohttp-configs", headers: [], body: nil).body,
                         try await servers[1].http.send(method: .GET, path: "/ohttp-configs", headers: [], body: nil).body]
        #expect(published[0] == published[1], "one key for both")
        let request = try await Self.encapsulate(try Self.configRequest(token: try await servers[0].tokens?.authorization()), server: servers[0])
        let (first, body) = try await Self.post(servers[0], request.encapsulated)
        let inner = try BinaryHTTPResponse(decoding: try request.openResponse(body))
        #expect(first == 200 && inner.status == 200)
        let (again, againBody) = try await Self.post(servers[1], request.encapsulated)
        #expect(again == 422 && Self.problemType(againBody) == "https://callveil.dev/problems/ohttp-replayed", "replayed at the other gateway: \(again)")
        for server in servers { await server.stop() }

        // The record itself: one admission of a key on any gateway; taken over once its window has passed.
        let time = ManualClock()
        let sealing = StoreSealing(keyEncryptionKey: SymmetricKey(size: .bits256))
        let stores = [try await PostgresStore.connect(database, sealing: sealing, logger: TestPostgres.logger),
                      try await PostgresStore.connect(database, sealing: sealing, logger: TestPostgres.logger)]
        let records = stores.map { PostgresReplayStore(store: $0, window: 600, clock: time.read) }
        let enc = (0..<32).map { _ in UInt8.random(in: 0...255) }
        async let a = records[0].admit(enc)
        async let b = records[1].admit(enc)
        #expect(try await [a, b].filter { $0 }.count == 1)
        time.set(days: 1)
        #expect(try await records[1].admit(enc))
        #expect(try await !records[0].admit(enc))
        for store in stores { await store.shutdown() }
    }
}
