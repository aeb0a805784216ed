import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

extension Doctor {
    /// Apple's relay speaks HTTP/2 to the gateway: a TLS handshake offering only `h2` (as `openssl s_client -alpn h2`)
    /// must agree on it.
    func gatewayALPNCheck() async -> DoctorCheck {
        let id = "tls.gateway-h2", title = "gateway TLS with ALPN h2"
        if settings.local { return .skipped(id, title, "local mode") }
        guard let url = URLComponents(string: settings.gatewayURL), let host = url.host else {
            return .fail(id, title, "the gateway URL does not parse", fix: "give the gateway URL as https://<host>/<path>")
        }
        let port = url.port ?? 443
        do {
            let negotiated = try await Self.negotiatedProtocol(host: host, port: port, connectTo: settings.hostOverrides[host] ?? host,
                                                               ca: settings.ca)
            guard negotiated == "h2" else {
                return .fail(id, title, "\(host):\(port) negotiated \(negotiated.map { "'\($0)'" } ?? "no application protocol") when offered only h2",
                             fix: "serve HTTP/2 on the gateway (callveil: http.protocol \"tls\"; a terminator in front: enable http2 on it)")
            }
            return .pass(id, title, "\(host):\(port) agreed on h2")
        } catch {
            return .fail(id, title, "\(host):\(port): \(error)", fix: "the gateway must accept TLS on 443 with a certificate the device trusts")
        }
    }

    /// The application protocol a TLS handshake with `host` (at `connectTo`) agrees on when only `h2` is offered.
    static func negotiatedProtocol(host: String, port: Int, connectTo: String, ca: String?) async throws -> String? {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let ca { tls.additionalTrustRoots = [.file(ca)] }
        let context = try NIOSSLContext(configuration: tls)
        let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: String?.self)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: context, serverHostname: host)
                    try channel.pipeline.syncOperations.addHandler(handler)
                    try channel.pipeline.syncOperations.addHandler(ALPNObserver(promise: promise))
                }
            }
            .connect(host: connectTo, port: port).get()
        let timeout = channel.eventLoop.scheduleTask(in: .seconds(5)) { promise.fail(ProbeError("no TLS handshake within 5 s")) }
        defer {
            timeout.cancel()
            channel.close(promise: nil)
        }
        return try await promise.futureResult.get()
    }
}

/// Completes its promise with the negotiated protocol when the handshake completes, or fails it with the error.
private final class ALPNObserver: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let promise: EventLoopPromise<String?>

    init(promise: EventLoopPromise<String?>) {
        self.promise = promise
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiated) = event { promise.succeed(negotiated) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ProbeError("the connection closed during the TLS handshake"))
        context.fireChannelInactive()
    }
}
