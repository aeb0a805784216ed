import Logging
import ServiceLifecycle

/// Runs a listener's application. A failure to bind becomes a `ListenerError` naming the address and the listener.
/// With a connection guard, shutdown is bounded: on SIGTERM the listener stops accepting, HTTP/1.1 connections close
/// after their current response and HTTP/2 connections get GOAWAY; requests in flight then get `grace` less half a
/// second to finish, and every connection still open is closed at once (a TLS peer is not waited for). Without that
/// bound, an idle HTTP/2 client that never answers the GOAWAY ping (a relay's long-lived connection) kept the process
/// running until the client left.
package struct ListenerService<Inner: Service>: Service {
    package let inner: Inner
    /// Which listener (`public port`, `admin listener`) and where.
    package let listener: String, host: String, port: Int
    /// The connections to close when the grace period ends, and the period; nil leaves shutdown to `inner`.
    package let shutdown: (connections: ConnectionGuard, grace: Duration)?
    package let logger: Logger

    package init(_ inner: Inner, listener: String, host: String, port: Int,
                 shutdown: (connections: ConnectionGuard, grace: Duration)? = nil, logger: Logger) {
        self.inner = inner
        (self.listener, self.host, self.port) = (listener, host, port)
        self.shutdown = shutdown
        self.logger = logger
    }

    package func run() async throws {
        let (shutdown, logger) = (self.shutdown, self.logger)
        // An unstructured task inherits the graceful-shutdown context of this one.
        let reaper = Task {
            guard let shutdown else { return }
            do {
                try await gracefulShutdown()
                // Closing takes a moment (the tasks of the connections end): half a second is kept for it, so the
                // process has exited when the grace period ends.
                try await Task.sleep(for: max(shutdown.grace - .milliseconds(500), .zero))
            } catch { return }
            let closed = shutdown.connections.closeAll()
            if closed > 0 {
                logger.notice("shutdown grace period over: open connections closed", metadata: ["connections": "\(closed)"])
            }
        }
        defer { reaper.cancel() }
        do { try await inner.run() } catch {
            throw ListenerError(error, listener: listener, host: host, port: port) ?? error
        }
    }
}
