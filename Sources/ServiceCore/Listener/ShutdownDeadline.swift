import Logging
import ServiceLifecycle

/// Bounds a listener's graceful shutdown. On SIGTERM the listener stops accepting, HTTP/1.1 connections close after
/// their current response and HTTP/2 connections get GOAWAY; requests in flight then get `grace` to finish, and every
/// connection still open is closed. Without the bound, an idle HTTP/2 client that never answers the GOAWAY ping (a
/// relay's long-lived connection) kept the process running until the client left.
package struct ShutdownDeadline<Inner: Service>: Service {
    package let inner: Inner
    package let connectionGuard: ConnectionGuard
    package let grace: Duration
    package let logger: Logger

    package init(_ inner: Inner, connectionGuard: ConnectionGuard, grace: Duration, logger: Logger) {
        self.inner = inner
        self.connectionGuard = connectionGuard
        self.grace = grace
        self.logger = logger
    }

    package func run() async throws {
        let (connectionGuard, grace, logger) = (self.connectionGuard, self.grace, self.logger)
        // An unstructured task inherits the graceful-shutdown context of this one.
        let reaper = Task {
            do {
                try await gracefulShutdown()
                try await Task.sleep(for: grace)
            } catch { return }
            let closed = connectionGuard.closeAll()
            if closed > 0 {
                logger.notice("shutdown grace period over: open connections closed", metadata: ["connections": "\(closed)"])
            }
        }
        defer { reaper.cancel() }
        try await inner.run()
    }
}
