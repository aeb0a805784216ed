import Hummingbird
import LookupEngine

/// Runs each request's handler in a task that is cancelled when the client goes away, so that work for a client
/// that can no longer receive the answer stops: a query waiting for the compute pool is dropped before it starts,
/// and a query between phases stops there. Hummingbird itself lets a handler run on after its client has gone.
package struct CancelOnDisconnectResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == LookupRequestContext {
    package typealias Context = LookupRequestContext

    package let inner: Inner
    package let connections: ClientConnections
    package let metrics: ServiceMetrics

    /// A responder that runs `inner`'s handlers in tasks cancelled when their client is gone.
    package init(inner: Inner, connections: ClientConnections, metrics: ServiceMetrics) {
        self.inner = inner
        self.connections = connections
        self.metrics = metrics
    }

    package func respond(to request: Request, context: LookupRequestContext) async throws -> Response {
        guard let connection = connections.connection(of: context.channel) else {
            return try await inner.respond(to: request, context: context)
        }
        let inner = self.inner
        let work = Task { try await inner.respond(to: request, context: context) }
        let token = connection.onGone { work.cancel() }
        defer { connection.cancel(token) }
        do {
            return try await withTaskCancellationHandler { try await work.value } onCancel: { work.cancel() }
        } catch {
            guard connection.isGone else { throw error }
            // Nobody reads this answer; it only keeps the client's departure out of the error log.
            metrics.increment("callveil_http_requests_abandoned_total")
            context.logger.debug("client went away; request abandoned")
            return Response(status: .init(code: 499, reasonPhrase: "Client Closed Request"))
        }
    }
}
