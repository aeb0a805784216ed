import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import NIOCore
import NIOSSL

/// The protocol stack of the public port, from `http.protocol`: HTTP/1.1; HTTP/2 with prior knowledge (`h2c`, for
/// a listener behind a TLS terminator); or TLS with ALPN offering `h2` and `http/1.1` (Apple's relay speaks HTTP/2
/// to a gateway). Every HTTP/1.1 connection or HTTP/2 stream gets the same per-request channel handlers.
enum PublicListener {
    /// The server builder for `http`; `handlers` makes the per-connection (per-stream) handlers.
    static func server(_ http: ServiceConfig.HTTPSettings, idleTimeout: TimeAmount,
                       handlers: @escaping @Sendable () -> [any RemovableChannelHandler]) throws -> HTTPServerBuilder {
        let stream = HTTP1Channel.Configuration(additionalChannelHandlers: handlers(), idleTimeout: idleTimeout)
        let idle = Duration.nanoseconds(idleTimeout.nanoseconds)
        // A relay keeps its HTTP/2 connections open: on shutdown, streams get 10 s to finish after GOAWAY.
        let http2 = HTTP2ChannelConfiguration(idleTimeout: idle, gracefulCloseTimeout: .seconds(10), streamConfiguration: stream)
        switch http.protocol ?? "http1" {
        case "h2c":
            return .plaintextHTTP2(configuration: http2)
        case "tls":
            guard let certificate = http.tlsCertificateFile, let key = http.tlsKeyFile else {
                throw ConfigError("http.protocol tls needs http.tlsCertificateFile and http.tlsKeyFile")
            }
            let tls: TLSConfiguration
            do {
                tls = TLSConfiguration.makeServerConfiguration(
                    certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                    privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            } catch {
                throw ConfigError("cannot load the TLS certificate or key: \(error)")
            }
            return try .http2Upgrade(tlsConfiguration: tls, configuration: http2)
        default:
            return .http1(configuration: stream)
        }
    }
}
