import Hummingbird
import Synchronization

/// The first gate of the public port: at most `limit` requests are being handled at once; one more is answered
/// 503 with `Retry-After` before anything is done for it. Every later stage (token verification and the nonce
/// store's writes, body reads, the compute queues) then sees a bounded number of requests, so none of their
/// queues can grow without bound under a flood and a well-behaved client waits behind at most `limit` others.
public struct InFlightLimitMiddleware: RouterMiddleware {
    /// Requests handled at once.
    public let limit: Int
    private let counter: Counter

    /// At most `limit` requests at once.
    public init(limit: Int) {
        self.limit = max(limit, 1)
        counter = Counter()
    }

    /// Requests being handled now.
    public var inFlight: Int { counter.value.withLock { $0 } }

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        let limit = self.limit
        let admitted = counter.value.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard admitted else { throw LookupError.unavailable("Too many requests in progress; retry later", retryAfter: 1) }
        defer { counter.value.withLock { $0 -= 1 } }
        return try await next(request, context)
    }

    private final class Counter: Sendable {
        let value = Mutex(0)
    }
}
