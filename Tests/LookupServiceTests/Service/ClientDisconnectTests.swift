import Dispatch
import Foundation
import LookupClient
import LookupService
import ServiceCore
import ServiceTestSupport
import Testing

/// A query whose client has gone is never computed: the HTTP layer cancels its handler when the connection ends,
/// and the compute pool drops the waiting job instead of starting it. Malformed HTTP framing in a body is a 400.
@Suite("Client disconnect")
struct ClientDisconnectTests {
    @Test("A queued /queries request whose client disconnects is dropped before it computes; one whose client waits is answered")
    func disconnectedQueryIsDropped() async throws {
        let (server, data) = try await Self.start { $0.http?.queueTimeoutSeconds = 60 }
        let pool = server.server.pool
        let record = try #require(data.records.first)
        let user = UUID().uuidString
        let device = server.device(userIdentifier: user)
        #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == record.blockValue)  // key stored, parsed

        // Every slot of the pool held by a job that waits for the test.
        let release = DispatchSemaphore(value: 0)
        let holders = (0..<pool.width).map { _ in Task { try await pool.run { release.wait() } } }
        #expect(try await eventually { pool.snapshot.running[.query] == pool.width })

        let port = try #require(URLComponents(string: server.url)?.port)
        let body = try await device.queryRequest(Array(record.number.utf8), in: DemoDataset.block).serializedBytes() as [UInt8]
        func send() throws -> RawConnection {
            let connection = try RawConnection(port: port)
            connection.send("POST /queries HTTP/1.1\r\nHost: x\r\nUser-Identifier: \(user)\r\n"
                            + "User-Agent: com.apple.ciphermld/1.0 iOS/18.2\r\nContent-Length: \(body.count)\r\n\r\n")
            connection.sendBytes(body)
            return connection
        }
        var leaving: RawConnection? = try send()
        #expect(try await eventually { pool.snapshot.queued[.query] == 1 })
        let staying = try send()
        #expect(try await eventually { pool.snapshot.queued[.query] == 2 })
        let before = pool.snapshot.cancelled
        leaving = nil  // the client closes its socket while its query waits for a slot
        try await Task.sleep(for: .milliseconds(300))
        for _ in holders { release.signal() }
        for holder in holders { try await holder.value }

        let (answer, _) = await staying.read(seconds: 20, until: "\r\n\r\n")
        let text = String(decoding: answer, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text.prefix(120))")
        #expect(try await eventually { pool.snapshot.queued[.query] == 0 })
        #expect(pool.snapshot.cancelled == before + 1, "the gone client's query was computed")
        _ = leaving
        #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == record.blockValue)
        await server.stop()
    }

    @Test("A body that breaks HTTP framing (bad chunk size) is answered 400, not 500 or 499 (the client has not gone)")
    func malformedChunkedBody() async throws {
        let (server, _) = try await Self.start()
        let port = try #require(URLComponents(string: server.url)?.port)
        // The parser's error and the handler's failed body read race; many tries make a lost race show.
        for _ in 0..<40 {
            let connection = try RawConnection(port: port)
            connection.send("POST /key HTTP/1.1\r\nHost: x\r\nUser-Identifier: u1\r\nUser-Agent: com.apple.ciphermld/1.0 iOS/18.2\r\n"
                            + "Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n")
            let (answer, _) = await connection.read(seconds: 5, until: "\r\n\r\n")
            let text = String(decoding: answer, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 400"), "\(text.prefix(200))")
        }
        await server.stop()
    }

    /// A server without Privacy Pass on a small demo dataset.
    static func start(edit: @escaping (inout ServiceConfig) -> Void = { _ in }) async throws -> (TestServer, DemoDataset) {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 30)
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases) {
            $0.privacyPass = .init(enabled: false)
            edit(&$0)
        })
        return (server, data)
    }
}
