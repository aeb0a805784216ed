import Foundation
import LookupClient
import LookupService
import ServiceCore
import ServiceLifecycle
import ServiceTestSupport
import Testing

/// The listeners: operational endpoints only on the admin listener; slow and idle clients cannot hold a socket;
/// the number of connections is capped.
@Suite("Listener limits", .serialized)
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

    @Test("A taken port is reported with its address and listener, the public port's and the admin listener's")
    func takenPortNamed() async throws {
        let server = try await Self.start()
        let port = try #require(URLComponents(string: server.url)?.port), adminPort = try #require(URLComponents(string: server.adminURL)?.port)
        func failure(port: Int, admin: Int) async throws -> ListenerError? {
            let app = try server.server.makeApplication(host: "127.0.0.1", port: port, admin: (nil, admin))
            do {
                try await ServiceGroup(configuration: .init(services: [app], logger: TestServer.logger)).run()
                return nil
            } catch let error as ListenerError { return error }
        }
        let publicTaken = try await failure(port: port, admin: 0)
        #expect(publicTaken?.code == .addressInUse)
        #expect(publicTaken?.description == "cannot listen on 127.0.0.1:\(port) (public port): Address already in use [addressInUse]")
        let adminTaken = try await failure(port: 0, admin: adminPort)
        #expect(adminTaken?.description.hasPrefix("cannot listen on 127.0.0.1:\(adminPort) (admin listener)") == true, "\(String(describing: adminTaken))")
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

    @Test("An upload refused on its headers (too large) gets its 413, not a reset, and a body that then ends keeps the connection")
    func earlyAnswerLingers() async throws {
        let server = try await Self.start { $0.privacyPass = .init(enabled: false) }
        let device = [("User-Identifier", "u1"), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2")]
        let oversized = [UInt8](repeating: 0, count: LookupRequestContext.maxBodyBytes + 1)
        // The client is still sending when the answer comes; closing at once resets the socket under it.
        #expect(try await server.http.send(path: "/key", headers: device, body: oversized).status == 413)
        // A refused request whose (small) body then arrives leaves the connection serving its next request.
        let port = try #require(URLComponents(string: server.url)?.port)
        let connection = try RawConnection(port: port)
        connection.send("POST /key HTTP/1.1\r\nHost: x\r\nUser-Agent: com.apple.ciphermld/1.0 iOS/18.2\r\nContent-Length: 3\r\n\r\n")
        try await Task.sleep(for: .milliseconds(300))
        connection.send("abcPOST /key HTTP/1.1\r\nHost: x\r\nUser-Agent: com.apple.ciphermld/1.0 iOS/18.2\r\nContent-Length: 0\r\n\r\n")
        let text = String(decoding: await connection.read(seconds: 3).bytes, as: UTF8.self)
        #expect(text.components(separatedBy: "HTTP/1.1 400").count - 1 == 2, "\(text.prefix(400))")
        await server.stop()
    }

    @Test("An upload refused on its headers that keeps sending is read at full speed only for the discard budget, then a trickle: a flood of large bodies is not copied in")
    func oversizedUploadIsNotRead() async throws {
        let server = try await Self.start { $0.privacyPass = .init(enabled: false) }
        let port = try #require(URLComponents(string: server.url)?.port)
        let connection = try RawConnection(port: port)
        connection.send("POST /key HTTP/1.1\r\nHost: x\r\nUser-Agent: com.apple.ciphermld/1.0 iOS/18.2\r\nUser-Identifier: u1\r\n"
            + "Content-Length: \(1 << 30)\r\n\r\n")
        await Self.expectRefusedUnread(connection)
        await server.stop()
    }

    /// Expects the HTTP/1.1 upload just declared on `connection` to be answered 413 and, while the client keeps
    /// sending, read only for the discard budget, then a trickle; and the connection closed once nothing more comes.
    static func expectRefusedUnread(_ connection: RawConnection) async {
        let (answer, _) = await connection.read(seconds: 5, until: "\r\n\r\n")
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 413"), "\(String(decoding: answer.prefix(200), as: UTF8.self))")
        // Reading at full speed would take every byte the client sends (hundreds of MiB in these seconds on
        // loopback); the connection takes the budget, what the two sockets' buffers hold, and a read per interval
        // (at most 256 KiB each).
        let seconds = 3.0
        let accepted = await connection.sendAsAccepted(seconds: seconds)
        let reads = Int(seconds / (Double(RequestDeadlineHandler.tarpitInterval.nanoseconds) / 1e9)) + 1
        #expect(accepted < RequestDeadlineHandler.discardBudget + (24 << 20) + reads * (256 << 10), "the server took \(accepted >> 20) MiB")
        // Nothing more arrives: the linger closes the connection.
        let (_, closed) = await connection.read(seconds: 5)
        #expect(closed, "the connection stayed open")
    }

    @Test("The stand-alone gateway's HTTP/1.1 port: an oversized upload is answered 413 from its declared length and not read at full speed")
    func oversizedUploadToStandAloneGateway() async throws {
        let directory = try temporaryDirectory()
        let gateway = try await StandAloneGateway.start(directory: directory, targets: [.init(authority: "lookup.example", origin: "http://127.0.0.1:9")])
        let connection = try RawConnection(port: gateway.port)
        connection.send("POST /ohttp-gateway HTTP/1.1\r\nHost: x\r\nContent-Type: message/ohttp-req\r\nContent-Length: \(1 << 30)\r\n\r\n")
        await Self.expectRefusedUnread(connection)
        await gateway.stop()
    }

    @Test("HTTP/2 (h2c, TLS): an oversized upload is answered 413 from its declared length, and its stream takes no more of the body",
          arguments: ["h2c", "tls"])
    func oversizedUploadOverHTTP2(protocol: String) async throws {
        let (server, _) = try await Self.start(protocol: `protocol`) { _ in }
        let port = try #require(URLComponents(string: server.url)?.port)
        let python = try #require(OHTTPInteropClient.command?.python, "run make deps")
        let script = OHTTPInteropClient.packageRoot.appendingPathComponent("bench/hostile.py").path
        // One stream declaring 1 GiB, its bytes sent as fast as the flow-control window allows for 4 s.
        let (output, _) = try await runChildProcess(python, [script, "--port", "\(port)", "--protocol", `protocol`, "--mode", "fill", "--count", "1",
                                                             "--stream-bytes", "\(1 << 30)", "--seconds", "4", "--path", "/key",
                                                             "--header", "user-identifier:u1"], mergeErrors: false)
        let report = try JSONSerialization.jsonObject(with: output) as? [String: Any]
        let statuses = report?["statuses"] as? [String] ?? []
        let sent = (report?["sent"] as? [Int])?.first ?? -1
        #expect(statuses == ["413"], "\(String(decoding: output, as: UTF8.self))")
        #expect(sent >= 0 && sent < 16 << 20, "the stream sent \(sent >> 20) MiB before it was refused")
        await server.stop()
    }

    @Test("Connections beyond the cap wait until one closes (the cap held by clients that were answered, idle for the timeout)")
    func connectionCap() async throws {
        let server = try await Self.start { $0.http?.maxConnections = 2; $0.http?.requestTimeoutSeconds = 3 }
        let port = try #require(URLComponents(string: server.url)?.port)
        try await Task.sleep(for: .seconds(3.5))  // the start's own keep-alive connection idles out
        // Two clients answered once, then idle on keep-alive: closed by the server after 3 s. (Sockets that were never
        // answered could not hold the cap: the connection guard closes the oldest of them for a newcomer.)
        var held: [RawConnection] = []
        for _ in 0..<2 {
            let connection = try RawConnection(port: port)
            held.append(connection)
            connection.send("GET /.well-known/private-token-issuer-directory HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(String(decoding: await connection.read(seconds: 2, until: "}]}").bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        }
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

    /// A service on `protocol` (`http1`, `h2c`, or `tls` with a fresh self-signed certificate, whose file is returned)
    /// over a small demo dataset, its config edited by `edit`.
    static func start(protocol: String, edit: @escaping (inout ServiceConfig) -> Void) async throws -> (server: TestServer, ca: String) {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 30)
        if `protocol` == "tls" { try await OHTTPInteropClient.run(["make-cert", directory]) }
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases) { config in
            config.http?.protocol = `protocol`
            if `protocol` == "tls" {
                config.http?.tlsCertificateFile = "\(directory)/cert.pem"
                config.http?.tlsKeyFile = "\(directory)/key.pem"
            }
            edit(&config)
        })
        return (server, "\(directory)/cert.pem")
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
        let (server, ca) = try await Self.start(protocol: `protocol`) { config in
            config.http?.maxConnections = 4
            config.http?.requestTimeoutSeconds = 3
        }
        let port = try #require(URLComponents(string: server.url)?.port)
        let url = "\(`protocol` == "tls" ? "https" : "http")://127.0.0.1:\(port)"
        let expected = `protocol` == "http1" ? "200 1.1" : "200 2"
        #expect(try await Self.curlStatus(url, protocol: `protocol`, ca: ca) == expected, "a live client before the flood")
        // Four silent sockets and a half TLS ClientHello (or a half HTTP/2 preface, or half a request line): the
        // listener holds at most 4 connections, 2 of them without a request.
        var hostile = try (0..<4).map { _ in try RawConnection(port: port) }
        let half = try RawConnection(port: port)
        switch `protocol` {
        case "tls": half.sendBytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])
        case "h2c": half.send("PRI * HTTP/2.0\r\n")
        default: half.send("GET / HT")
        }
        hostile.append(half)
        // The live client connects once the server has taken all five in (three evicted, two left holding every
        // slot for connections without a request). Connections accepted together register on different event
        // loops in either order, so without the wait a hostile socket accepted before the client could register
        // after it and evict it: the race this test is not about.
        let evicted = "callveil_http_connections_closed_total{reason=\"evicted\"}"
        func evictions() async throws -> Double {
            metricValue(String(decoding: try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil).body, as: UTF8.self), evicted)
        }
        let waited = Date()
        while try await evictions() < 3, Date().timeIntervalSince(waited) < 10 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try await evictions() == 3, "hostile sockets taken in before the live client")
        let start = Date()
        let live = try await Self.curlStatus(url, protocol: `protocol`, ca: ca)
        #expect(live == expected, "a live client while silent sockets fill the cap: \(live) after \(Date().timeIntervalSince(start)) s")
        for (i, connection) in hostile.enumerated() {
            #expect(await connection.read(seconds: 10).closed, "hostile socket \(i) still open after \(Date().timeIntervalSince(start)) s")
        }
        #expect(Date().timeIntervalSince(start) < 12)
        hostile = []
        let metrics = String(decoding: try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil).body, as: UTF8.self)
        // The guard closed every silent socket: three evicted by later arrivals, the fourth by the live client's
        // arrival or its handshake timeout (the half request may be ended by its request deadline instead).
        let handshake = metricValue(metrics, "callveil_http_connections_closed_total{reason=\"handshake\"}")
        #expect(metricValue(metrics, evicted) + handshake >= 4, "evicted \(metricValue(metrics, evicted)), handshake \(handshake)")
        await server.stop()
    }

    @Test("One HTTP/2 connection holds at most its share of the body budget (the gateway path); another connection is still read")
    func perConnectionBodyBudget() async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 30)
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases) { config in
            config.http?.protocol = "h2c"
            config.http?.maxBodyMegabytesPerConnection = 11
            config.gateway = .init()
        })
        let port = try #require(URLComponents(string: server.url)?.port)
        let python = try #require(OHTTPInteropClient.command?.python, "run make deps")
        let script = OHTTPInteropClient.packageRoot.appendingPathComponent("bench/hostile.py").path
        // Four 4 MiB uploads on one connection, each held open before its last byte: together they cross 11 MiB.
        async let filled = runChildProcess(python, [script, "--port", "\(port)", "--protocol", "h2c", "--mode", "fill", "--count", "4",
                                                    "--stream-bytes", "\(4 << 20)", "--seconds", "8", "--path", "/ohttp-gateway"],
                                           mergeErrors: false)
        try await Task.sleep(for: .seconds(3))
        let (other, _) = try await runChildProcess("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--http2-prior-knowledge",
                                                                      "-X", "POST", "-H", "content-type: message/ohttp-req",
                                                                      "--data-binary", "garbage", "\(server.url)/ohttp-gateway"], mergeErrors: false)
        #expect(String(decoding: other, as: UTF8.self) == "400", "another connection is read and judged while the first holds its share")
        let report = try JSONSerialization.jsonObject(with: try await filled.output) as? [String: Any]
        let statuses = report?["statuses"] as? [String] ?? []
        // The streams' bytes arrive interleaved, so which of them crosses the connection's 11 MiB is not fixed: two
        // are held (8 MiB), the others refused.
        #expect(statuses.count == 4 && statuses.filter { $0 == "none" }.count == 2 && statuses.filter { $0 == "503" }.count == 2, "\(statuses)")
        await server.stop()
    }

    @Test("Request bodies in flight are bounded by the bytes received, not declared: a trickler holds nothing, a large body holds what it sent, beyond the budget 503 with Retry-After")
    func bodyBudget() async throws {
        let server = try await Self.start {
            $0.privacyPass = .init(enabled: false)
            $0.http?.maxBodyMegabytesInFlight = 10
            $0.http?.minBodyBytesPerSecond = 1 << 20
        }
        let port = try #require(URLComponents(string: server.url)?.port)
        let head = "POST /config HTTP/1.1\r\nHost: x\r\nUser-Identifier: u1\r\nUser-Agent: com.apple.ciphermld/1.0 iOS/18.2\r\n"
        let device = [("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2")]
        // `/config`: its bodies may take the whole 10 MiB (a `/key` body is bounded by the keys the use cases need).
        // A 10 MiB upload that is slow to arrive holds only the bytes it sent: another request is read and judged.
        var holder: RawConnection? = try RawConnection(port: port)
        holder?.send(head + "Content-Length: \(10 << 20)\r\n\r\nabc")
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await server.http.send(path: "/config", headers: [("User-Identifier", "u2")] + device, body: [0xFF, 0xFF]).status == 400)
        // Nine MiB of it arrive: now it holds them, and a 2 MiB body does not fit.
        holder?.sendBytes([UInt8](repeating: 0x41, count: 9 << 20))
        // Until the server has read them (a loaded machine takes longer than a fixed sleep).
        let budget = server.server.bodies.budget
        #expect(try await eventually(seconds: 10) { budget.inUse >= 9 << 20 }, "held \(budget.inUse) bytes")
        let refused = try RawConnection(port: port)
        refused.send(head.replacingOccurrences(of: "u1", with: "u3") + "Content-Length: \(2 << 20)\r\n\r\n")
        refused.sendBytes([UInt8](repeating: 0x42, count: 2 << 20))
        let (answer, _) = await refused.read(seconds: 5)
        let text = String(decoding: answer, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 503"), "\(text.prefix(200))")
        #expect(text.lowercased().contains("retry-after: 1"))
        // The holder gone, what it held is returned.
        holder = nil
        var status = 0
        for _ in 0..<50 where status != 400 {
            try await Task.sleep(for: .milliseconds(100))
            status = try await server.http.send(path: "/config", headers: [("User-Identifier", "u4")] + device, body: [UInt8](repeating: 0xFF, count: 2 << 20)).status
        }
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

    @Test("Gates after the cheap checks: one User-Identifier's excess gets 429 at once; trickled bodies hold no slot of the port and are cut off at the minimum rate")
    func requestGates() async throws {
        let server = try await Self.start {
            $0.privacyPass = .init(enabled: false)
            $0.http?.maxRequestsPerUser = 1
            $0.http?.maxRequestsInFlight = 2
        }
        let port = try #require(URLComponents(string: server.url)?.port)
        func slowUpload(_ user: String, path: String = "/key") throws -> RawConnection {
            let connection = try RawConnection(port: port)
            connection.send("POST \(path) HTTP/1.1\r\nHost: x\r\nUser-Identifier: \(user)\r\nUser-Agent: com.apple.ciphermld/1.0 iOS/18.2\r\n"
                            + "Content-Length: 1000\r\n\r\nabc")
            return connection
        }
        func answer(_ connection: RawConnection) async -> String {
            String(decoding: await connection.read(seconds: 5).bytes, as: UTF8.self)
        }
        let start = Date()
        let first = try slowUpload("u1")  // holds u1's share (its header checks passed), no slot of the port
        try await Task.sleep(for: .milliseconds(300))
        let sameUser = try slowUpload("u1")
        let refused = await answer(sameUser)
        #expect(refused.hasPrefix("HTTP/1.1 429") && refused.lowercased().contains("retry-after: 1"), "\(refused.prefix(200))")
        // More tricklers than the port has slots, on the PIR routes and on the issuer's: the port still answers.
        let tricklers = try (2..<6).map { try slowUpload("u\($0)") } + [try slowUpload("u9", path: "/issue")]
        try await Task.sleep(for: .milliseconds(300))
        let device = [("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2")]
        #expect(try await server.http.send(path: "/key", headers: [("User-Identifier", "u7")] + device, body: [0xFF, 0xFF]).status == 400,
                "through both gates: judged on its content")
        // The minimum body rate (16 KiB/s after 2 s of grace) cuts them off long before the 30 s request timeout.
        for (i, connection) in ([first] + tricklers).enumerated() {
            #expect(await connection.read(seconds: 8).closed, "trickler \(i) still open after \(Date().timeIntervalSince(start)) s")
        }
        #expect(Date().timeIntervalSince(start) < 9)
        #expect(try await server.http.send(path: "/key", headers: [("User-Identifier", "u1")] + device, body: [0xFF, 0xFF]).status == 400)
        let metrics = String(decoding: try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil).body, as: UTF8.self)
        #expect(metrics.contains("callveil_http_slow_bodies_total"))
        await server.stop()
    }
}
