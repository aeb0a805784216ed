import Foundation
import LookupEngine
import LookupStorage

extension ServiceConfig {
    /// Listener limits and the admin listener.
    public struct HTTPSettings: Codable, Sendable, Equatable {
        /// Open connections on the public port at most; beyond, new connections wait in the kernel's backlog
        /// (default 1024).
        public var maxConnections: Int?
        /// Seconds a client has to send a whole request (headers and body), counted from the connection's
        /// opening or the previous response; then the connection is closed (default 30). A connection with no
        /// request in progress for this long is closed too, whatever its protocol.
        public var requestTimeoutSeconds: Double?
        /// Seconds from accepting a connection to its first request's headers: TLS handshake, HTTP/2 preface and
        /// settings included (default: the request timeout, at most 10).
        public var handshakeTimeoutSeconds: Double?
        /// Seconds from SIGTERM to the process's exit at most: requests in flight have until half a second before the
        /// end, then every connection still open is closed (default 10).
        public var shutdownGraceSeconds: Double?
        /// Seconds a request may wait for compute before it is answered 503 (default 2).
        public var queueTimeoutSeconds: Double?
        /// Address of the admin listener (`/healthz`, `/metrics`; default 127.0.0.1).
        public var adminHost: String?
        /// Port of the admin listener (default 9090; 0 picks a free one).
        public var adminPort: Int?
        /// Request-body MiB the public port holds at once, reserved as bodies arrive; a request beyond is answered
        /// 503 (default 256).
        public var maxBodyMegabytesInFlight: Int?
        /// Request-body MiB one connection holds at once (an HTTP/2 connection carries many streams; default 64).
        public var maxBodyMegabytesPerConnection: Int?
        /// Average bytes per second a request body must arrive at after a 2 s grace; a slower body's stream or
        /// connection is closed (default 16384).
        public var minBodyBytesPerSecond: Int?
        /// Queries waiting for compute at most, per compute slot; beyond, 503 at once (default 8).
        public var queuedQueriesPerSlot: Int?
        /// Requests the public port handles at once; beyond, 503 at once before any work (default 256).
        public var maxRequestsInFlight: Int?
        /// PIR requests of one User-Identifier handled at once; beyond, 429 at once (default 4).
        public var maxRequestsPerUser: Int?
        /// PIR requests past the fair gate at once, the rest waiting their turn, the User-Identifiers served least
        /// lately first (default: twice the compute pool's width in-process, 64 on a coordinator with remote workers).
        public var maxRequestsProcessing: Int?
        /// Longest wait at the fair gate, in milliseconds; a request whose turn would come later is answered 503
        /// at once (default: `queueTimeoutSeconds`).
        public var maxAdmissionWaitMilliseconds: Int?
        /// The public port's protocol: `http1` (default), `h2c` (HTTP/2 with prior knowledge, no TLS: behind a
        /// terminator), or `tls` (TLS with ALPN `h2` and `http/1.1`; needs `tlsCertificateFile` and `tlsKeyFile`).
        public var `protocol`: String?
        /// PEM certificate chain of the public port when `protocol` is `tls`.
        public var tlsCertificateFile: String?
        /// PEM private key of the public port when `protocol` is `tls`.
        public var tlsKeyFile: String?

        /// The shutdown grace period (`shutdownGraceSeconds`).
        public var shutdownGrace: Duration { .milliseconds(Int64((shutdownGraceSeconds ?? 10) * 1000)) }

        /// Settings.
        public init(maxConnections: Int? = nil, requestTimeoutSeconds: Double? = nil, queueTimeoutSeconds: Double? = nil,
                    adminHost: String? = nil, adminPort: Int? = nil, maxBodyMegabytesInFlight: Int? = nil,
                    queuedQueriesPerSlot: Int? = nil) {
            self.maxBodyMegabytesInFlight = maxBodyMegabytesInFlight
            self.queuedQueriesPerSlot = queuedQueriesPerSlot
            self.maxConnections = maxConnections
            self.requestTimeoutSeconds = requestTimeoutSeconds
            self.queueTimeoutSeconds = queueTimeoutSeconds
            self.adminHost = adminHost
            self.adminPort = adminPort
        }
    }
}
