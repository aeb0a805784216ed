import Foundation
import ServiceCore
import ServiceTestSupport
import Testing

/// Graceful shutdown (SIGTERM) ends within `http.shutdownGraceSeconds` whatever clients stay connected.
@Suite("Shutdown")
struct ShutdownTests {
    @Test("Shutdown ends within the grace period with a client still connected: an HTTP/2 connection that never answers GOAWAY (TLS, h2c), an HTTP/1.1 request whose body stops; a request finishing within the grace is answered",
          arguments: ["tls", "h2c", "http1"])
    func endsWithinGrace(protocol: String) async throws {
        let (server, ca) = try await ListenerLimitsTests.start(protocol: `protocol`) { config in
            // Without the grace period's end, the connections below would hold the server for a minute.
            config.http?.requestTimeoutSeconds = 60
            config.http?.minBodyBytesPerSecond = 1
            config.http?.shutdownGraceSeconds = 1
        }
        let port = try #require(URLComponents(string: server.url)?.port)
        var held: OHTTPInteropClient.HeldConnection?
        var finishing: RawConnection?, stalled: RawConnection?
        // An authorized /key upload whose body has half arrived: a request in progress, not answered yet.
        func partial() async throws -> String {
            let token = try #require(try await server.tokens?.authorization())
            return "POST /key HTTP/1.1\r\nHost: x\r\nUser-Identifier: shutdown-test\r\nAuthorization: \(token)\r\n"
                + "Content-Type: application/octet-stream\r\nContent-Length: 20\r\n\r\n0123456789"
        }
        if `protocol` == "http1" {
            finishing = try RawConnection(port: port)
            stalled = try RawConnection(port: port)
            finishing?.send(try await partial())
            stalled?.send(try await partial())
        } else {
            held = try await OHTTPInteropClient.HeldConnection.open(port: port, path: "/.well-known/private-token-issuer-directory",
                                                                   ca: `protocol` == "tls" ? ca : nil)
            #expect(held?.status == "200")
        }
        defer { held?.stop() }
        try await Task.sleep(for: .milliseconds(300))
        let start = ContinuousClock.now
        let done = Tally()
        let stopping = Task { await server.stop(); done.add() }
        if let finishing {
            try await Task.sleep(for: .milliseconds(200))
            finishing.send("0123456789")
            let answer = String(decoding: await finishing.read(seconds: 5, until: "\r\n\r\n").bytes, as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 "), "a request finishing within the grace period is answered: \(answer.debugDescription)")
        }
        var stopped = false
        while ContinuousClock.now - start < .seconds(20) {
            if done.count > 0 { stopped = true; break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let elapsed = ContinuousClock.now - start
        #expect(stopped && elapsed < .seconds(3), "the server stopped after \(elapsed) (grace 1 s), stopped: \(stopped)")
        if let stalled { #expect(await stalled.read(seconds: 2).closed, "the stalled request's connection is closed") }
        held?.stop()
        stalled = nil
        await stopping.value
    }
}
