import Foundation
import LookupClient
import LookupService
import ServiceTestSupport
import Testing

/// The listeners: operational endpoints only on the admin listener; slow and idle clients cannot hold a socket;
/// the number of connections is capped.
@Suite("Listener limits")
struct ListenerLimitsTests {
    static func start(edit: @escaping (inout ServiceConfig) -> Void = { _ in }) async throws -> TestServer {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 30)
        return try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases, edit: edit))
    }

    @Test("/healthz and /metrics answer on the admin listener only; the PIR endpoints only on the public port")
    func adminListener() async throws {
        let server = try await Self.start()
        #expect(server.adminURL != server.url)
        for path in ["/healthz", "/metrics"] {
            #expect(try await server.http.send(method: .GET, path: path, headers: [], body: nil).status == 404, "\(path) on the public port")
            #expect(try await server.admin.send(method: .GET, path: path, headers: [], body: nil).status == 200, "\(path) on the admin port")
        }
        #expect(try await server.admin.send(path: "/config", headers: [], body: []).status == 404)
        #expect(try await server.http.send(method: .GET, path: "/.well-known/private-token-issuer-directory", headers: [], body: nil).status == 200)
        await server.stop()
    }

    @Test("A request not fully received within the timeout (slow headers, slow body, idle keep-alive) closes its connection")
    func requestTimeout() async throws {
        let server = try await Self.start { $0.http?.requestTimeoutSeconds = 1 }
        let port = try #require(URLComponents(string: server.url)?.port)
        let slowHeaders = try RawConnection(port: port)
        slowHeaders.send("POST /config HTTP/1.1\r\nHost: x\r\nUser-Ag")
        let slowBody = try RawConnection(port: port)
        slowBody.send("POST /config HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc")
        let idle = try RawConnection(port: port)
        let start = Date()
        for (name, connection) in [("slow headers", slowHeaders), ("slow body", slowBody), ("idle", idle)] {
            let (_, closed) = await connection.read(seconds: 5)
            #expect(closed, "\(name) still open after \(Date().timeIntervalSince(start)) s")
        }
        #expect(Date().timeIntervalSince(start) < 8)  // 1 s, plus slack for parallel tests on two cores
        // A prompt client is served, and its keep-alive connection is closed once idle for the timeout.
        let prompt = try RawConnection(port: port)
        prompt.send("GET /.well-known/private-token-issuer-directory HTTP/1.1\r\nHost: x\r\n\r\n")
        var answer: [UInt8] = []
        var closed = false
        let asked = Date()
        while !closed, Date().timeIntervalSince(asked) < 10 {
            let (bytes, end) = await prompt.read(seconds: 0.2)
            answer += bytes
            closed = end
        }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        #expect(closed && Date().timeIntervalSince(asked) >= 1, "closed \(closed) after \(Date().timeIntervalSince(asked)) s")
        await server.stop()
    }

    @Test("Connections beyond the cap wait until one closes")
    func connectionCap() async throws {
        let server = try await Self.start { $0.http?.maxConnections = 2; $0.http?.requestTimeoutSeconds = 2 }
        let port = try #require(URLComponents(string: server.url)?.port)
        let held = try (0..<2).map { _ in try RawConnection(port: port) }  // idle: closed by the server after 2 s
        try await Task.sleep(for: .milliseconds(200))
        let third = try RawConnection(port: port)
        third.send("GET /.well-known/private-token-issuer-directory HTTP/1.1\r\nHost: x\r\n\r\n")
        let (early, _) = await third.read(seconds: 1)
        #expect(early.isEmpty, "served while two connections were open")
        let (late, _) = await third.read(seconds: 6)
        #expect(String(decoding: late, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        // Both held connections are closed by the server's idle timeout (2 s after it accepted them, which on a
        // loaded machine can be later than the third's answer): a closed one returns at once.
        for connection in held { #expect(await connection.read(seconds: 10).closed) }
        await server.stop()
    }

    /// A client that speaks the protocol: curl over HTTP/2 (TLS with ALPN, or prior knowledge), or HTTP/1.1.
    static func curlStatus(_ url: String, protocol: String, ca: String?) async throws -> String {
        var arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", "--max-time", "8"]
        switch `protocol` {
        case "tls": arguments += ["--http2", "--cacert", ca ?? ""]
        case "h2c": arguments += ["--http2-prior-knowledge"]
        default: break
        }
        let (output, _) = try await runChildProcess("/usr/bin/curl", arguments + [url + "/.well-known/private-token-issuer-directory"], mergeErrors: false)
        return String(decoding: output, as: UTF8.self)
    }

    @Test("TLS and h2c: silent sockets and a half handshake are closed, and cannot lock live clients out of the capped listener",
          arguments: ["tls", "h2c", "http1"])
    func silentSocketsEveryProtocol(protocol: String) async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 30)
        if `protocol` == "tls" { try await OHTTPInteropClient.run(["make-cert", directory]) }
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases) { config in
            config.http?.protocol = `protocol`
            config.http?.maxConnections = 4
            config.http?.requestTimeoutSeconds = 3
            if `protocol` == "tls" {
                config.http?.tlsCertificateFile = "\(directory)/cert.pem"
                config.http?.tlsKeyFile = "\(directory)/key.pem"
            }
        })
        let port = try #require(URLComponents(string: server.url)?.port)
        let url = "\(`protocol` == "tls" ? "https" : "http")://127.0.0.1:\(port)"
        let ca = "\(directory)/cert.pem"
        let expected = `protocol` == "http1" ? "200 1.1" : "200 2"
        #expect(try await Self.curlStatus(url, protocol: `protocol`, ca: ca) == expected, "a live client before the flood")
        // Four silent sockets, a half TLS ClientHello (or a half HTTP/2 preface, or half a request line) and more
        // silent ones arriving while a live client asks: the listener holds at most 4 connections.
        var hostile = try (0..<4).map { _ in try RawConnection(port: port) }
        let half = try RawConnection(port: port)
        switch `protocol` {
        case "tls": half.sendBytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])
        case "h2c": half.send("PRI * HTTP/2.0\r\n")
        default: half.send("GET / HT")
        }
        hostile.append(half)
        let start = Date()
        let live = try await Self.curlStatus(url, protocol: `protocol`, ca: ca)
        #expect(live == expected, "a live client while silent sockets fill the cap: \(live) after \(Date().timeIntervalSince(start)) s")
        for (i, connection) in hostile.enumerated() {
            #expect(await connection.read(seconds: 10).closed, "hostile socket \(i) still open after \(Date().timeIntervalSince(start)) s")
        }
        #expect(Date().timeIntervalSince(start) < 12)
        hostile = []
        let metrics = String(decoding: try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil).body, as: UTF8.self)
        #expect(metrics.contains("callveil_http_connections_closed_total{reason=\"evicted\"}") || metrics.contains("callveil_http_connections_closed_total{reason=\"handshake\"}"))
        await server.stop()
    }

    @Test("Request bodies in flight are bounded: beyond the budget a request is answered 503 with Retry-After, unread")
    func bodyBudget() async throws {
        let server = try await Self.start {
            $0.privacyPass = .init(enabled: false)
            $0.http?.maxBodyMegabytesInFlight = 10
        }
        let port = try #require(URLComponents(string: server.url)?.port)
        let head = "POST /key HTTP/1.1\r\nHost: x\r\nUser-Identifier: u1\r\nUser-Agent: com.apple.ciphermld/1.0 iOS/18.2\r\n"
        // A 10 MiB upload that is slow to arrive holds the whole budget.
        var holder: RawConnection? = try RawConnection(port: port)
        holder?.send(head + "Content-Length: \(10 << 20)\r\n\r\nabc")
        try await Task.sleep(for: .milliseconds(300))
        let refused = try RawConnection(port: port)
        refused.send(head + "Content-Length: 1000\r\n\r\n")
        let (answer, _) = await refused.read(seconds: 5)
        let text = String(decoding: answer, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 503"), "\(text.prefix(200))")
        #expect(text.lowercased().contains("retry-after: 1"))
        // The holder gone, its reservation is returned: a small request is read and judged on its content.
        holder = nil
        try await Task.sleep(for: .milliseconds(300))
        let (status, _) = try await server.http.send(path: "/key", headers: [("User-Identifier", "u2"), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2")],
                                                     body: [0xFF, 0xFF])
        #expect(status == 400)
        await server.stop()
    }

    @Test("AdmissionBudget grants within its capacity and returns what a finished request held")
    func bodyBudgetAccounting() async throws {
        let budget = AdmissionBudget.bodies(capacity: 100)
        let inner = try await budget.with(60) {
            await #expect(throws: LookupError.self) { try await budget.with(41) {} }
            return try await budget.with(40) { budget.inUse }
        }
        #expect(inner == 100)
        #expect(budget.inUse == 0)
        await #expect(throws: CancellationError.self) { try await budget.with(60) { throw CancellationError() } as Void }
        #expect(budget.inUse == 0)
    }

    @Test("Gates before any work: one User-Identifier's excess gets 429, the port's excess 503, both with Retry-After")
    func requestGates() async throws {
        let server = try await Self.start {
            $0.privacyPass = .init(enabled: false)
            $0.http?.maxRequestsPerUser = 1
            $0.http?.maxRequestsInFlight = 2
        }
        let port = try #require(URLComponents(string: server.url)?.port)
        func slowUpload(_ user: String) throws -> RawConnection {
            let connection = try RawConnection(port: port)
            connection.send("POST /key HTTP/1.1\r\nHost: x\r\nUser-Identifier: \(user)\r\nUser-Agent: com.apple.ciphermld/1.0 iOS/18.2\r\n"
                            + "Content-Length: 1000\r\n\r\nabc")
            return connection
        }
        func answer(_ connection: RawConnection) async -> String {
            String(decoding: await connection.read(seconds: 5).bytes, as: UTF8.self)
        }
        var first: RawConnection? = try slowUpload("u1")  // holds u1's share and one of the port's two slots
        try await Task.sleep(for: .milliseconds(300))
        let sameUser = try slowUpload("u1")
        let refused = await answer(sameUser)
        #expect(refused.hasPrefix("HTTP/1.1 429") && refused.lowercased().contains("retry-after: 1"), "\(refused.prefix(200))")
        var second: RawConnection? = try slowUpload("u2")  // the port's second slot
        try await Task.sleep(for: .milliseconds(300))
        let directory = try RawConnection(port: port)
        directory.send("GET /.well-known/private-token-issuer-directory HTTP/1.1\r\nHost: x\r\n\r\n")
        let full = await answer(directory)
        #expect(full.hasPrefix("HTTP/1.1 503") && full.lowercased().contains("retry-after: 1"), "\(full.prefix(200))")
        // The slow uploads gone, their slots and shares are returned.
        first = nil
        second = nil
        let device = [("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2")]
        var status = 0
        for _ in 0..<50 where status != 400 {  // the server notices the closed connections within moments
            try await Task.sleep(for: .milliseconds(100))
            status = try await server.http.send(path: "/key", headers: [("User-Identifier", "u3")] + device, body: [0xFF, 0xFF]).status
        }
        #expect(status == 400)  // through both gates: judged on its content
        #expect(try await server.http.send(path: "/key", headers: [("User-Identifier", "u1")] + device, body: [0xFF, 0xFF]).status == 400)
        _ = (first, second)
        await server.stop()
    }
}
