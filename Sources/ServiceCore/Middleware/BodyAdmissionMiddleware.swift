import Hummingbird
import LookupEngine
import NIOCore
import Synchronization

/// Reads a request's body before its handler runs, within three bounds, and only after the route's cheap checks
/// (it is placed after them): the body's bytes are reserved in the port's budget as they arrive (not the declared
/// length up front, so a socket that trickles holds only what it sent); one connection holds at most
/// `perConnection` of them (an HTTP/2 connection carries many streams); and the body must arrive at
/// `minBytesPerSecond` on average after a grace period, else the request's channel is closed. The bytes stay
/// reserved until the handler's response is made. Beyond `limit` the request gets 413, beyond a budget 503 with
/// `Retry-After`; `refusal` may answer either in a route's own format instead. The body is collected with
/// `BodyBufferAllocator`, so a large one leaves the process with its request rather than staying in the heap.
public struct BodyAdmissionMiddleware: RouterMiddleware {
    /// Why a body was refused.
    public enum Refusal: Sendable {
        /// The body (declared or received) exceeds the route's limit.
        case tooLarge(limit: Int)
        /// The port's or the connection's body budget is spent.
        case busy
    }

    /// The bounds shared by a listener's routes.
    public struct Bounds: Sendable {
        /// Body bytes held at once by the whole port.
        public let budget: AdmissionBudget
        /// Body bytes held at once per connection.
        public let connections: ConnectionBudgets
        /// Average body rate required after `grace`.
        public let minBytesPerSecond: Int
        /// Time a body may take whatever its size.
        public let grace: Duration

        /// Bounds: `budgetBytes` for the port, `perConnectionBytes` per connection, the rate and the grace.
        public init(budgetBytes: Int, perConnectionBytes: Int, minBytesPerSecond: Int = 16 << 10, grace: Duration = .seconds(2)) {
            budget = .bodies(capacity: budgetBytes)
            connections = ConnectionBudgets(capacity: perConnectionBytes)
            self.minBytesPerSecond = max(minBytesPerSecond, 1)
            self.grace = grace
        }
    }

    package let bounds: Bounds
    /// The route's largest body now (a route whose bound follows the loaded use cases reads it per request).
    package let currentLimit: @Sendable () -> Int
    package let refusal: @Sendable (Refusal) -> Response?
    package let metrics: ServiceMetrics?

    /// Bodies of at most `limit` bytes within `bounds`; `refusal` may answer a refusal in the route's format.
    public init(bounds: Bounds, limit: Int, metrics: ServiceMetrics? = nil, refusal: @escaping @Sendable (Refusal) -> Response? = { _ in nil }) {
        self.init(bounds: bounds, limit: { limit }, metrics: metrics, refusal: refusal)
    }

    /// Bodies of at most `limit()` bytes, asked per request, within `bounds`.
    public init(bounds: Bounds, limit: @escaping @Sendable () -> Int, metrics: ServiceMetrics? = nil,
                refusal: @escaping @Sendable (Refusal) -> Response? = { _ in nil }) {
        self.bounds = bounds
        currentLimit = limit
        self.metrics = metrics
        self.refusal = refusal
    }

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        let limit = currentLimit()
        if DeclaredLengthMiddleware.declaresMore(request, than: limit) { return try refuse(.tooLarge(limit: limit)) }
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        let connection = ConnectionGuard.connection(of: context.channel)
        let held = Held(bounds: bounds, connection: connection)
        defer { held.releaseAll() }
        let expected = min(declared ?? limit, limit)
        let allowed = bounds.grace + .milliseconds(Int64(expected) * 1000 / Int64(bounds.minBytesPerSecond))
        let channel = context.channel
        let metrics = self.metrics
        let fired = Flag()
        // Too slow: the channel (the HTTP/1.1 connection or the HTTP/2 stream) is closed, which ends the body.
        let slow = Task {
            try await Task.sleep(for: allowed)
            fired.set()
            metrics?.increment("callveil_http_slow_bodies_total")
            channel.close(promise: nil)
        }
        defer { slow.cancel() }
        var request = request
        // Not capacity 0: NIO answers that with an empty buffer of its default allocator, which the body would then grow.
        var collected = BodyBufferAllocator.allocator.buffer(capacity: 1)
        do {
            for try await chunk in request.body {
                guard collected.readableBytes + chunk.readableBytes <= limit else { return try refuse(.tooLarge(limit: limit)) }
                guard held.take(chunk.readableBytes) else { return try refuse(.busy) }
                var chunk = chunk
                collected.writeBuffer(&chunk)
            }
        } catch {
            if fired.isSet { throw LookupError(.requestTimeout, "The request body did not arrive in time") }
            throw error
        }
        slow.cancel()
        request.body = RequestBody(buffer: collected)
        return try await next(request, context)
    }

    private func refuse(_ why: Refusal) throws -> Response {
        if let response = refusal(why) { return response }
        switch why {
        case .tooLarge(let limit): throw LookupError.contentTooLarge(limit: limit)
        case .busy: throw LookupError.unavailable(bounds.budget.refusal, retryAfter: 1)
        }
    }

    /// Set once the body's time ran out.
    package final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }

    /// The bytes one request holds in the port's and its connection's budgets.
    package final class Held: Sendable {
        let bounds: Bounds
        let connection: ObjectIdentifier
        private let taken = Mutex(0)

        init(bounds: Bounds, connection: ObjectIdentifier) {
            self.bounds = bounds
            self.connection = connection
        }

        func take(_ units: Int) -> Bool {
            guard units > 0 else { return true }
            guard bounds.budget.tryReserve(units) else { return false }
            guard bounds.connections.tryReserve(units, for: connection) else {
                bounds.budget.release(units)
                return false
            }
            taken.withLock { $0 += units }
            return true
        }

        func releaseAll() {
            let units = taken.withLock { units in defer { units = 0 }; return units }
            bounds.budget.release(units)
            bounds.connections.release(units, for: connection)
        }
    }
}

/// Body bytes held per connection, each connection within `capacity`.
public final class ConnectionBudgets: Sendable {
    /// Bytes one connection may hold.
    public let capacity: Int
    private let used = Mutex<[ObjectIdentifier: Int]>([:])

    /// Budgets of `capacity` bytes per connection.
    public init(capacity: Int) { self.capacity = max(capacity, 1) }

    package func tryReserve(_ units: Int, for connection: ObjectIdentifier) -> Bool {
        used.withLock { used in
            let now = used[connection, default: 0]
            guard now + units <= capacity else { return false }
            used[connection] = now + units
            return true
        }
    }

    package func release(_ units: Int, for connection: ObjectIdentifier) {
        guard units > 0 else { return }
        used.withLock { used in
            let left = used[connection, default: 0] - units
            used[connection] = left > 0 ? left : nil
        }
    }

    /// Bytes held by all connections now.
    public var inUse: Int { used.withLock { $0.values.reduce(0, +) } }
}

extension ServiceConfig.HTTPSettings {
    /// The public port's body bounds from these settings.
    public var bodyBounds: BodyAdmissionMiddleware.Bounds {
        .init(budgetBytes: (maxBodyMegabytesInFlight ?? 256) << 20, perConnectionBytes: (maxBodyMegabytesPerConnection ?? 64) << 20,
              minBytesPerSecond: minBodyBytesPerSecond ?? 16 << 10)
    }

    /// The public port's in-flight limit from these settings.
    public var inFlightLimit: InFlightLimitMiddleware { InFlightLimitMiddleware(limit: maxRequestsInFlight ?? 256) }
}
