import Foundation
import Testing
import ZeroMQ

/// The ZeroMQ wrapper: multipart ROUTER/DEALER exchange, poll, CURVE encryption with a ZAP allow-list.
@Suite("ZeroMQ")
struct ZeroMQTests {
    @Test("ROUTER/DEALER multipart round trip over tcp with poll")
    func routerDealer() throws {
        let context = try ZMQContext()
        let router = try ZMQSocket(context: context, kind: .router)
        try router.bind("tcp://127.0.0.1:0")
        let dealer = try ZMQSocket(context: context, kind: .dealer)
        try dealer.set(5, string: "worker-1")  // ZMQ_ROUTING_ID
        try dealer.connect(router.lastEndpoint)
        let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try dealer.send([[1, 2, 3], [], payload])
        #expect(try ZMQSocket.poll([router], timeoutMilliseconds: 5000) == [true])
        let received = try #require(try router.receive())
        #expect(received.count == 4 && received[0] == Array("worker-1".utf8) && received[1] == [1, 2, 3] && received[3] == payload)
        try router.send([received[0], [9]])
        #expect(try ZMQSocket.poll([dealer], timeoutMilliseconds: 5000) == [true])
        #expect(try dealer.receive() == [[9]])
        #expect(try dealer.receive(dontWait: true) == nil)
    }

    @Test("CURVE: a listed client key is admitted, an unknown one is refused")
    func curve() throws {
        #expect(ZMQContext.has("curve"))
        let context = try ZMQContext()
        let server = try CurveKeyPair.generate()
        let good = try CurveKeyPair.generate()
        let bad = try CurveKeyPair.generate()
        let zap = try ZAPAuthenticator(context: context, allowedPublicKeys: [good.publicKey])
        let router = try ZMQSocket(context: context, kind: .router)
        try server.configureServer(router, zapDomain: "callveil")
        try router.bind("tcp://127.0.0.1:0")
        let endpoint = router.lastEndpoint

        let intruder = try ZMQSocket(context: context, kind: .dealer)
        try bad.configureClient(intruder, serverPublicKey: server.publicKey)
        try intruder.connect(endpoint)
        try intruder.send([Array("let me in".utf8)], dontWait: true)
        let trusted = try ZMQSocket(context: context, kind: .dealer)
        try good.configureClient(trusted, serverPublicKey: server.publicKey)
        try trusted.connect(endpoint)
        try trusted.send([Array("hello".utf8)])

        #expect(try ZMQSocket.poll([router], timeoutMilliseconds: 5000) == [true])
        let message = try #require(try router.receive())
        #expect(message.last == Array("hello".utf8))
        #expect(try ZMQSocket.poll([router], timeoutMilliseconds: 500) == [false])  // the intruder's never arrives
        #expect(zap.refusedCount >= 1)
        #expect(throws: ZMQError.self) { try CurveKeyPair(publicKey: "short", secretKey: good.secretKey) }
    }
}
