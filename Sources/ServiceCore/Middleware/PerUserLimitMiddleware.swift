import Hummingbird
import Synchronization

/// A fair share per `User-Identifier`: at most `limit` PIR requests of one user are handled at once; one more is
/// answered 429 with `Retry-After` before its token is verified. A phone asks one thing at a time, so a flood
/// from a few identities queues behind its own requests, not in front of everyone else's (`make overload`).
public struct PerUserLimitMiddleware: RouterMiddleware {
    /// Requests of one user handled at once.
    public let limit: Int
    private let counts: Counts

    /// At most `limit` requests per user at once.
    public init(limit: Int) {
        self.limit = max(limit, 1)
        counts = Counts()
    }

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        // A missing or invalid header is refused by UserIdentifierMiddleware later; it is not counted here.
        guard let user = UserIdentifierMiddleware.plausible(in: request) else { return try await next(request, context) }
        let limit = self.limit
        let admitted = counts.value.withLock { counts in
            guard counts[user, default: 0] < limit else { return false }
            counts[user, default: 0] += 1
            return true
        }
        guard admitted else {
            throw LookupError.tooManyRequests("Too many requests in progress for this User-Identifier", retryAfter: 1)
        }
        defer {
            counts.value.withLock { counts in
                let left = counts[user, default: 1] - 1
                counts[user] = left > 0 ? left : nil
            }
        }
        return try await next(request, context)
    }

    private final class Counts: Sendable {
        let value = Mutex<[String: Int]>([:])
    }
}
