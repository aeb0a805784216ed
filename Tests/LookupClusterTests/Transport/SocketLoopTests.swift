import ClusterTransport
import Foundation
import ServiceTestSupport
import Synchronization
import Testing
import ZeroMQ
#if canImport(Glibc)
import Glibc
#endif

/// A socket loop's thread polls the loop's wake pipe; once the loop is released it must stop, and the pipe's
/// descriptor numbers must not be freed while it polls them, or it drains whatever the process opens next under
/// those numbers (a client library's socket, which then finds its readable bytes gone).
@Suite("Socket loop")
struct SocketLoopTests {
    /// The names of this process's threads.
    private static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    @Test("A loop released without stop ends its thread and never drains a descriptor opened after it")
    func releasedLoopLetsGo() async throws {
        let context = try ZMQContext()
        let name = "cv-loop-\(getpid() % 10000)"
        var loop: SocketLoop? = try SocketLoop(context: context, kind: .dealer, name: name, setup: { socket in
            try socket.bind("inproc://socket-loop-release")
            return "inproc://socket-loop-release"
        }, onMessage: { _, _ in })
        #expect(try await eventually(seconds: 5) { Self.threadNames().contains(name) })
        _ = loop
        loop = nil

        // Whatever the process opens now may take the numbers the loop's pipe had; a byte written to it must stay
        // there for its reader.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        var byte: UInt8 = 7
        #expect(write(ends[1], &byte, 1) == 1)
        #expect(try await eventually(seconds: 5) { !Self.threadNames().contains(name) }, "the loop's thread outlived the loop")
        var poller = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        #expect(poll(&poller, 1, 0) == 1, "a byte written after the loop was released was drained by its thread")
    }

    @Test("A connection that closes is reported with the descriptor its messages carried")
    func disconnectReported() async throws {
        let context = try ZMQContext()
        let seen = Mutex<[Int32]>([])
        let closed = Mutex<[Int32]>([])
        let loop = try SocketLoop(context: context, kind: .router, name: "cv-loop-monitor", setup: { socket in
            try socket.bind("tcp://127.0.0.1:0")
            return socket.lastEndpoint
        }, onMessage: { _, peer in
            if let descriptor = peer.descriptor { seen.withLock { $0.append(descriptor) } }
        }, onDisconnect: { descriptor in closed.withLock { $0.append(descriptor) } })
        defer { loop.stop() }
        let client = try ZMQSocket(context: context, kind: .dealer)
        try client.connect(loop.endpoint)
        try client.send([Array("hello".utf8)])
        #expect(try await eventually(seconds: 5) { !seen.withLock { $0.isEmpty } })
        let descriptor = try #require(seen.withLock { $0.first })
        #expect(closed.withLock { $0.isEmpty }, "nothing closed yet")
        client.close()
        #expect(try await eventually(seconds: 5) { closed.withLock { $0 } == [descriptor] },
                "closed \(closed.withLock { $0 }), the connection's descriptor \(descriptor)")
    }
}
