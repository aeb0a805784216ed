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
        // Where each lookup's time went: every stage of the path through the gateway has its histogram.
        let queries = exchanges.filter { $0["path"] as? String == "/queries" }.count
        #expect(stageCount(metrics, "decapsulation") == exchanges.count)
        #expect(stageCount(metrics, "token_check") >= queries && queries > 0, "token checks: \(stageCount(metrics, "token_check"))")
        for stage in ["routing", "execution", "queue_wait", "compute"] {
            #expect(stageCount(metrics, stage) >= queries, "\(stage): \(stageCount(metrics, stage)) of \(queries) lookups")
        }
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
        let staller = try StallingOrigin()
        defer { staller.stop() }
        let targets = [ServiceConfig.Gateway.Target(authority: "lookup.example", origin: server.url),
                       ServiceConfig.Gateway.Target(authority: "stall.example", origin: "http://127.0.0.1:\(staller.port)")]
        let gateway = try await StandAloneGateway.start(directory: directory, targets: targets) { $0.targetTimeoutSeconds = 3 }
        let http = LookupHTTPClient(baseURL: "http://127.0.0.1:\(gateway.port)")
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
        await gateway.stop()
        await server.stop()
    }
}
