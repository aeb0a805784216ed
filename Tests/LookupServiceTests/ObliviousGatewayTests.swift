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

/// The Oblivious HTTP gateway in the service: an independent client (pyhpke, httpx/h2 from PyPI) through it over
/// HTTP/2 with every PIR answer checked; each kind of bad input answered with its status and problem type;
/// keys persisted, rotated with overlap, and shared through PostgreSQL.
@Suite("Oblivious HTTP gateway")
struct ObliviousGatewayTests {
    static func start(protocol: String, gateway: ServiceConfig.Gateway = .init(), count: Int = 60)
        async throws -> (server: TestServer, data: DemoDataset, directory: String, scheme: String) {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: count)
        if `protocol` == "tls" { try await OHTTPInteropClient.run(["make-cert", directory]) }
        let config = try writeServiceConfig(in: directory, usecases: data.useCases) { config in
            config.http?.protocol = `protocol`
            if `protocol` == "tls" {
                config.http?.tlsCertificateFile = "\(directory)/cert.pem"
                config.http?.tlsKeyFile = "\(directory)/key.pem"
            }
            config.gateway = gateway
        }
        return (try await TestServer.start(configPath: config), data, directory, `protocol` == "tls" ? "https" : "http")
    }

    /// A device whose every request (tokens included) goes through the independent client and the gateway.
    static func interop(protocol: String) async throws {
        let (server, data, directory, scheme) = try await start(protocol: `protocol`)
        let base = server.url.replacingOccurrences(of: "http://", with: "\(scheme)://")
        let proxy = try await OHTTPInteropClient.Proxy.start(gatewayURL: base + "/ohttp-gateway", keysURL: base + "/ohttp-configs",
                                                 ca: scheme == "https" ? "\(directory)/cert.pem" : nil, h2c: `protocol` == "h2c",
                                                 logPath: "\(directory)/exchanges.jsonl")
        defer { proxy.stop() }
        let http = LookupHTTPClient(baseURL: proxy.url)
        let device = LookupDevice(http: http, userIdentifier: UUID().uuidString, authorization: PrivacyPassAuthorization(issuer: http, userToken: "AAAA"))
        try await device.syncConfig([DemoDataset.block, DemoDataset.identity])
        var checked = 0
        for record in data.records.prefix(6) {
            let keyword = Array(record.number.utf8)
            #expect(try await device.lookup(keyword, in: DemoDataset.block) == [record.block ? 1 : 0], "block answer for \(record.number)")
            #expect(try await device.lookup(keyword, in: DemoDataset.identity) == (try record.callIdentity()), "identity answer for \(record.number)")
            checked += 2
        }
        #expect(try await device.lookup(Array(DemoDataset.absentNumber.utf8), in: DemoDataset.block) == nil)
        let exchanges = try proxy.exchanges()
        let paths = Set(exchanges.compactMap { $0["path"] as? String })
        #expect(paths.isSuperset(of: ["/config", "/key", "/queries", "/issue"]), "paths: \(paths)")
        #expect(exchanges.allSatisfy { $0["http_version"] as? String == "HTTP/2" && $0["gateway_status"] as? Int == 200 })
        #expect(Set(exchanges.compactMap { $0["framing"] as? String }) == ["known", "indeterminate"])
        #expect(Set(exchanges.compactMap { $0["aead"] as? Int }) == [1, 3])
        let metrics = String(decoding: try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil).body, as: UTF8.self)
        #expect(metrics.contains("callveil_ohttp_requests_total{result=\"ok\"} \(exchanges.count)"))
        proxy.stop()
        print("interop (\(`protocol`)): \(exchanges.count) exchanges through the gateway over HTTP/2 (\(paths.sorted().joined(separator: ", "))), \(checked + 1) PIR answers checked")
        await server.stop()
    }

    @Test("Interop: an independent client over HTTP/2 with TLS and ALPN h2; every PIR answer decrypted and checked")
    func interopTLS() async throws {
        try await Self.interop(protocol: "tls")
    }

    @Test("Interop: the same over h2c (HTTP/2 with prior knowledge, as behind a TLS terminator)")
    func interopH2C() async throws {
        try await Self.interop(protocol: "h2c")
    }

    @Test("The independent client's framing matches RFC 9458 Appendix A byte for byte")
    func interopSelfTest() async throws {
        #expect(try await OHTTPInteropClient.run(["selftest"]).contains("selftest ok"))
    }

    /// An encapsulated request to the server's first published key.
    static func encapsulate(_ inner: [UInt8], server: TestServer, suite: OHTTPSuite? = nil) async throws -> OHTTPClientRequest {
        let (status, body) = try await server.http.send(method: .GET, path: "/ohttp-configs", headers: [], body: nil)
        #expect(status == 200)
        let config = try #require(try OHTTPKeyConfig.decodeList(body).first)
        return try OHTTPClientRequest(inner, config: config, suite: suite)
    }

    static func post(_ server: TestServer, _ body: [UInt8], contentType: String = "message/ohttp-req") async throws -> (Int, [UInt8]) {
        let answer = try await server.http.exchange(path: "/ohttp-gateway", headers: [("Content-Type", contentType)], body: body)
        return (answer.status, answer.body)
    }

    static func problemType(_ body: [UInt8]) -> String? {
        ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any])?["type"] as? String
    }

    static let configBody: [UInt8] = (try? ProtoConfigRequest.with { $0.usecases = [DemoDataset.block] }.serializedBytes()) ?? []

    static func configRequest(token: String?) throws -> [UInt8] {
        var headers = [BinaryHTTPField("user-identifier", "gw-test"), BinaryHTTPField("user-agent", "com.apple.ciphermld/1.0 iOS/18.2 test")]
        if let token { headers.append(BinaryHTTPField("authorization", token)) }
        return try BinaryHTTPRequest(method: "POST", authority: "lookup.example", path: "/config", headers: headers, content: configBody).encoded()
    }

    @Test("Bad input: wrong media type, truncated, tampered, unknown key id, replayed, oversized, bad Binary HTTP; each answered with its code")
    func badInput() async throws {
        var settings = ServiceConfig.Gateway()
        settings.maxRequestBytes = 4096
        let (server, _, _, _) = try await Self.start(protocol: "http1", gateway: settings)
        let valid = try await Self.encapsulate(try Self.configRequest(token: try await server.tokens?.authorization()), server: server)

        // Accepted once; the inner answer is the service's.
        let (status, body) = try await Self.post(server, valid.encapsulated)
        #expect(status == 200)
        let inner = try BinaryHTTPResponse(decoding: try valid.openResponse(body))
        #expect(inner.status == 200 && (try? ProtoConfigResponse(serializedBytes: inner.content).configs[DemoDataset.block]) != nil)

        // Replayed: refused in the clear (422), the service never sees it twice.
        let (replayStatus, replayBody) = try await Self.post(server, valid.encapsulated)
        #expect(replayStatus == 422 && Self.problemType(replayBody) == "https://callveil.dev/problems/ohttp-replayed")

        // Wrong media type.
        let fresh = try await Self.encapsulate(try Self.configRequest(token: nil), server: server)
        #expect(try await Self.post(server, fresh.encapsulated, contentType: "application/octet-stream").0 == 415)

        // Truncated at every length up to the header and key, and within the ciphertext.
        for length in [0, 1, 6, 7, 38, 39, fresh.encapsulated.count - 1] {
            let (s, b) = try await Self.post(server, Array(fresh.encapsulated.prefix(length)))
            #expect(s == 400 && Self.problemType(b) == "https://callveil.dev/problems/ohttp-undecryptable", "truncated to \(length)")
        }
        // Tampered: a flipped bit in the key, the ciphertext, the tag; a suite byte changed.
        for index in [10, 45, fresh.encapsulated.count - 1] {
            var tampered = fresh.encapsulated
            tampered[index] ^= 0x01
            let (s, b) = try await Self.post(server, tampered)
            #expect(s == 400 && Self.problemType(b) == "https://callveil.dev/problems/ohttp-undecryptable", "tampered at \(index)")
        }
        var otherSuite = fresh.encapsulated
        otherSuite[6] = 0x02  // AES-256-GCM: not offered by default
        let (suiteStatus, suiteBody) = try await Self.post(server, otherSuite)
        #expect(suiteStatus == 400 && Self.problemType(suiteBody) == "https://iana.org/assignments/http-problem-types#ohttp-key")

        // Unknown key identifier: the RFC 9458 key-configuration problem, so the client fetches the configurations again.
        var unknownKey = fresh.encapsulated
        unknownKey[0] &+= 1
        let (keyStatus, keyBody) = try await Self.post(server, unknownKey)
        #expect(keyStatus == 400 && Self.problemType(keyBody) == "https://iana.org/assignments/http-problem-types#ohttp-key")

        // Oversized: declared or not, refused before it is opened.
        let (bigStatus, bigBody) = try await Self.post(server, fresh.encapsulated + [UInt8](repeating: 0, count: 5000))
        #expect(bigStatus == 413 && Self.problemType(bigBody) == "https://callveil.dev/problems/ohttp-tooLarge")

        // Binary HTTP with bad lengths inside a good encapsulation: an encapsulated 400.
        let good = try Self.configRequest(token: nil)
        for bad in [Array(good.prefix(3)) + [0x3f], [0x00, 0x04] + Array("POST".utf8) + [0x45], [0x09] + good.dropFirst(), good + [0x01]] {
            let request = try await Self.encapsulate(bad, server: server)
            let (s, b) = try await Self.post(server, request.encapsulated)
            #expect(s == 200)
            let answer = try BinaryHTTPResponse(decoding: try request.openResponse(b))
            #expect(answer.status == 400 && Self.problemType(answer.content) == "https://callveil.dev/problems/ohttp-badInnerRequest")
        }

        // The service's own refusals pass through encapsulated: no token is 401.
        let (noTokenStatus, noTokenBody) = try await Self.post(server, fresh.encapsulated)
        let noTokenAnswer = try BinaryHTTPResponse(decoding: try fresh.openResponse(noTokenBody))
        #expect(noTokenStatus == 200 && noTokenAnswer.status == 401)
        // Padded to the same size class: the relay cannot tell the refusal from the answer by its length.
        #expect(noTokenBody.count == body.count && (body.count - 32) % 1024 == 0, "401: \(noTokenBody.count) bytes, 200: \(body.count) bytes")

        // ChaCha20-Poly1305 works as well as AES-128-GCM.
        let chacha = try await Self.encapsulate(try Self.configRequest(token: try await server.tokens?.authorization()), server: server,
                                                suite: .x25519ChaChaPoly)
        let (chachaStatus, chachaBody) = try await Self.post(server, chacha.encapsulated)
        let chachaAnswer = try BinaryHTTPResponse(decoding: try chacha.openResponse(chachaBody))
        #expect(chachaStatus == 200 && chachaAnswer.status == 200)

        let metrics = String(decoding: try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil).body, as: UTF8.self)
        for line in ["callveil_ohttp_requests_total{result=\"replayed\"} 1", "callveil_ohttp_requests_total{result=\"unsupportedMediaType\"} 1",
                     "callveil_ohttp_requests_total{result=\"keyConfiguration\"} 2", "callveil_ohttp_requests_total{result=\"tooLarge\"} 1",
                     "callveil_ohttp_requests_total{result=\"undecryptable\"} 10", "callveil_ohttp_requests_total{result=\"badInnerRequest\"} 4",
                     "callveil_ohttp_decapsulation_failures_total{code=\"unknownKeyID\"} 1"] {
            #expect(metrics.contains(line), "metrics: \(line)")
        }
        await server.stop()
    }

    @Test("Stand-alone gateway: forwards to its allow-listed target only; another origin gets an encapsulated 421")
    func standAlone() async throws {
        let (server, _, directory, _) = try await Self.start(protocol: "http1", gateway: .init(enabled: false))
        let config = "\(directory)/gateway.json"
        let staller = try StallingOrigin()
        defer { staller.stop() }
        let targets = [ServiceConfig.Gateway.Target(authority: "lookup.example", origin: server.url),
                       ServiceConfig.Gateway.Target(authority: "stall.example", origin: "http://127.0.0.1:\(staller.port)")]
        var file = ServiceConfig(users: [], usecases: [])
        file.gateway = .init(keyDirectory: "\(directory)/standalone-keys", targets: targets)
        file.gateway?.targetTimeoutSeconds = 3
        file.http = .init(adminPort: 0)
        try JSONEncoder().encode(file).write(to: URL(fileURLWithPath: config))
        let gateway = try await GatewayServer(configPath: config, logger: TestServer.logger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try gateway.makeApplication(host: "127.0.0.1", port: 0, onServerRunning: { continuation.yield($0) })
        let group = ServiceGroup(configuration: .init(services: [app], logger: TestServer.logger))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let http = LookupHTTPClient(baseURL: "http://127.0.0.1:\(port)")
        // The service's own port has no gateway.
        #expect(try await server.http.send(method: .GET, path: "/ohttp-configs", headers: [], body: nil).status == 404)
        let (status, keys) = try await http.send(method: .GET, path: "/ohttp-configs", headers: [], body: nil)
        #expect(status == 200, "\(String(decoding: keys, as: UTF8.self))")
        let config0 = try #require(try OHTTPKeyConfig.decodeList(keys).first)

        func through(_ authority: String) async throws -> BinaryHTTPResponse {
            var headers = [BinaryHTTPField("user-identifier", "gw-standalone"), BinaryHTTPField("user-agent", "com.apple.ciphermld/1.0 iOS/18.2 test")]
            if let token = try await server.tokens?.authorization() { headers.append(BinaryHTTPField("authorization", token)) }
            let inner = try BinaryHTTPRequest(method: "POST", authority: authority, path: "/config", headers: headers, content: Self.configBody)
            let request = try OHTTPClientRequest(try inner.encoded(), config: config0)
            let answer = try await http.exchange(path: "/ohttp-gateway", headers: [("Content-Type", "message/ohttp-req")], body: request.encapsulated)
            #expect(answer.status == 200)
            return try BinaryHTTPResponse(decoding: try request.openResponse(answer.body))
        }
        let served = try await through("lookup.example")
        #expect(served.status == 200 && (try? ProtoConfigResponse(serializedBytes: served.content).configs[DemoDataset.block]) != nil)
        let refused = try await through("elsewhere.example")
        #expect(refused.status == 421 && Self.problemType(refused.content) == "https://callveil.dev/problems/ohttp-targetNotAllowed")
        // A target that sends its headers and part of its body, then stalls: the exchange is bounded as a whole.
        let started = Date()
        let stalled = try await withThrowingTaskGroup(of: BinaryHTTPResponse?.self) { group in
            group.addTask { try await through("stall.example") }
            group.addTask { try await Task.sleep(for: .seconds(15)); return nil }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        #expect(stalled?.status == 502 && Self.problemType(stalled?.content ?? []) == "https://callveil.dev/problems/ohttp-targetFailed",
                "a stalled target pinned the request for \(Date().timeIntervalSince(started)) s")
        #expect(Date().timeIntervalSince(started) < 10)
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        await gateway.shutdown()
        await server.stop()
    }

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
        #expect(entries.count == 2 && entries[1].notAfter == time.now.addingTimeInterval(2 * day))
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
        async let a = PostgresGatewayKeyStore(store: stores[0]).ensure(rings[0])
        async let b = PostgresGatewayKeyStore(store: stores[1]).ensure(rings[1])
        let changed = try await [a, b]
        #expect(changed.filter { $0 }.count == 1)
        #expect(!rings[0].publishedConfigs.isEmpty && rings[0].publishedConfigs == rings[1].publishedConfigs)
        // A request to one gateway's key opens at the other.
        let request = try OHTTPClientRequest(try BinaryHTTPRequest(method: "GET", path: "/").encoded(),
                                             config: try #require(try OHTTPKeyConfig.decodeList(rings[0].publishedConfigs).first))
        #expect(throws: Never.self) { try rings[1].gateway?.decapsulate(request.encapsulated) }

        time.set(days: 8.5)
        #expect(try await PostgresGatewayKeyStore(store: stores[1]).ensure(rings[1]))
        #expect(try await !PostgresGatewayKeyStore(store: stores[0]).ensure(rings[0]))
        #expect(rings[0].publishedConfigs == rings[1].publishedConfigs)
        #expect(try OHTTPKeyConfig.decodeList(rings[0].publishedConfigs).count == 2)

        // Sealed at rest: the stored bytes are not the private key.
        let stored = try await TestPostgres.withConnection(to: settings) { connection -> [Data] in
            var rows: [Data] = []
            for try await sealed in try await connection.query("SELECT sealed_key FROM gateway_keys", logger: TestPostgres.logger).decode(Data.self) {
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

/// An HTTP origin that answers every request with its headers and 3 bytes of a 100,000-byte body, then sends nothing
/// more: a target stalled mid-body (a Python child process on loopback).
final class StallingOrigin: @unchecked Sendable {
    let port: Int
    private let process: Process

    init() throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", """
            import socket, sys, threading, time
            server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(16)
            print(server.getsockname()[1], flush=True)
            held = []
            def serve(conn):
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 100000\\r\\n\\r\\nabc")
                held.append(conn)
            while True:
                conn, _ = server.accept()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()
            """]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice  // not the test runner's: it waits for that pipe to close
        try process.run()
        let line = String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(line) else {
            process.terminate()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the stalling origin did not start: \(line)"])
        }
        self.port = port
    }

    /// Kills the origin (SIGKILL: the service lifecycle of the tests ignores SIGTERM, and a child inherits that).
    func stop() { kill(process.processIdentifier, SIGKILL) }
}
