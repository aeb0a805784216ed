import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import LookupEngine
import NIOCore
import NIOSSL

/// The protocol stack of the public port, from `http.protocol`: HTTP/1.1; HTTP/2 with prior knowledge (`h2c`, for
/// a listener behind a TLS terminator); or TLS with ALPN offering `h2` and `http/1.1` (Apple's relay speaks HTTP/2
/// to a gateway). Every accepted connection gets the `ConnectionGuard` first (before TLS), and every HTTP/1.1
/// connection or HTTP/2 stream the same per-request channel handlers.
package enum PublicListener {
    /// The server builder for `http`; `handlers` makes the per-connection (per-stream) handlers.
    package static func server(_ http: ServiceConfig.HTTPSettings, idleTimeout: TimeAmount, connectionGuard: ConnectionGuard,
                       handlers: @escaping @Sendable () -> [any RemovableChannelHandler]) throws -> HTTPServerBuilder {
        let stream = HTTP1Channel.Configuration(additionalChannelHandlers: handlers(), idleTimeout: idleTimeout)
        let idle = Duration.nanoseconds(idleTimeout.nanoseconds)
        // A relay keeps its HTTP/2 connections open: on shutdown, streams get 10 s to finish after GOAWAY.
        let http2 = HTTP2ChannelConfiguration(idleTimeout: idle, gracefulCloseTimeout: .seconds(10), streamConfiguration: stream)
        switch http.protocol ?? "http1" {
        case "h2c":
            return HTTPServerBuilder { responder in
                GuardedChildChannel(inner: HTTP2Channel(responder: responder, configuration: http2), connectionGuard: connectionGuard)
            }
        case "tls":
            guard let certificate = http.tlsCertificateFile, let key = http.tlsKeyFile else {
                throw ConfigError("http.protocol tls needs http.tlsCertificateFile and http.tlsKeyFile")
            }
            let tls: TLSConfiguration
            do {
                // A connection the guard closes waits NIO's 5 s for the peer's close_notify, and a silent one never
                // sends it: that keeps a hostile client from reconnecting (and costing a handshake) sooner. With 1 s,
                // make overload's hostile TLS sockets reconnected twice as often (1,989 silent ones against 870).
                // Shutdown does not wait for it: it closes at the socket (`ConnectionGuard.closeAll`).
                tls = TLSConfiguration.makeServerConfiguration(
                    certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                    privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            } catch {
                throw ConfigError("cannot load the TLS certificate or key: \(error)")
            }
            return HTTPServerBuilder { responder in
                GuardedChildChannel(inner: try HTTP2UpgradeChannel(tlsConfiguration: tls, configuration: http2, responder: responder),
                                    connectionGuard: connectionGuard)
            }
        default:
            return HTTPServerBuilder { responder in
                GuardedChildChannel(inner: HTTP1Channel(responder: responder, configuration: stream), connectionGuard: connectionGuard)
            }
        }
    }

    /// The guard of a listener with `http`'s limits: the first request within `http.handshakeTimeoutSeconds`
    /// (default: the request timeout, at most 10 s), idle connections closed after the request timeout, and at
    /// most half of `maxConnections` held by connections without a request.
    package static func connectionGuard(_ http: ServiceConfig.HTTPSettings, onClose: @escaping @Sendable (String) -> Void) -> ConnectionGuard {
        let request = http.requestTimeoutSeconds ?? 30
        let handshake = http.handshakeTimeoutSeconds ?? min(request, 10)
        return ConnectionGuard(handshakeTimeout: .milliseconds(Int64(handshake * 1000)), idleTimeout: .milliseconds(Int64(request * 1000)),
                               maxUnproven: max((http.maxConnections ?? 1024) / 2, 1), onClose: onClose)
    }
}

/// A server child channel that puts the connection guard first in the pipeline, then sets up `inner`.
package struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    package typealias Value = Inner.Value
    package let inner: Inner
    package let connectionGuard: ConnectionGuard

    package func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let inner = self.inner
        return channel.pipeline.addHandler(connectionGuard.handler()).flatMap { inner.setup(channel: channel, logger: logger) }
    }

    package func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
