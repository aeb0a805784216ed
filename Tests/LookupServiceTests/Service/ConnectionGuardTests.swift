import NIOCore
import NIOEmbedded
import ServiceCore
import Synchronization
import Testing

/// The guard's choice of which unproven connection to close when too many are open.
@Suite("Connection guard")
struct ConnectionGuardTests {
    /// A connection opened through the guard's handler, as the listener opens one.
    static func open(_ connectionGuard: ConnectionGuard) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: connectionGuard.handler())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        return channel
    }

    @Test("Beyond the unproven cap the oldest silent connection is closed, not an older one that has sent its first bytes")
    func silentFirst() throws {
        let closed = Closes()
        let connectionGuard = ConnectionGuard(handshakeTimeout: .seconds(10), idleTimeout: .seconds(10), maxUnproven: 2,
                                              onClose: { closed.add($0) })
        // A live client's connection was registered before a burst of silent ones (event loops may register them in
        // any order) and has sent its ClientHello; the silent ones have sent nothing.
        let first = try Self.open(connectionGuard)
        let live = try Self.open(connectionGuard)
        try live.writeInbound(ByteBuffer(bytes: [0x16, 0x03, 0x01]))
        let silent = try (0..<3).map { _ in try Self.open(connectionGuard) }
        #expect(live.isActive, "the connection that spoke was closed for a silent one")
        #expect(!first.isActive)
        #expect(silent.filter(\.isActive).count == 1 && silent.last?.isActive == true)
        #expect(connectionGuard.unprovenCount == 2)
        #expect(closed.reasons == ["evicted", "evicted", "evicted"])

        // When every unproven connection has spoken, the oldest goes.
        try silent[2].writeInbound(ByteBuffer(bytes: [0x50]))
        let late = try Self.open(connectionGuard)
        try late.writeInbound(ByteBuffer(bytes: [0x50]))
        #expect(!live.isActive || !silent[2].isActive)
        #expect(late.isActive)
        let next = try Self.open(connectionGuard)
        #expect(next.isActive && late.isActive && !live.isActive && !silent[2].isActive)
    }

    /// Reasons the guard reported, in order.
    final class Closes: Sendable {
        private let value = Mutex<[String]>([])
        func add(_ reason: String) { value.withLock { $0.append(reason) } }
        var reasons: [String] { value.withLock { $0 } }
    }
}
