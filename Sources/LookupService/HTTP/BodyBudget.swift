import Synchronization

/// A bound on the request-body bytes the PIR endpoints hold at once. Each request reserves its declared length
/// (or the body limit when it has none) before its body is read and gives it back when answered; a request that
/// does not fit is answered 503 with `Retry-After` at once, its body unread. Without it, a connection cap of 1,024
/// and 10 MiB `/key` bodies would let a flood hold 10 GiB.
public final class BodyBudget: Sendable {
    /// Bytes that may be reserved at once.
    public let capacity: Int
    private let reserved = Mutex(0)

    /// A budget of `capacity` bytes.
    public init(capacity: Int) {
        self.capacity = capacity
    }

    /// Bytes reserved now.
    public var inUse: Int { reserved.withLock { $0 } }

    /// Runs `body` with `bytes` reserved; throws 503 when they do not fit.
    public func with<T>(_ bytes: Int, _ body: () async throws -> T) async throws -> T {
        let bytes = max(bytes, 1)
        let granted = reserved.withLock { used in
            guard used + bytes <= capacity else { return false }
            used += bytes
            return true
        }
        guard granted else { throw LookupError.unavailable("Too many request bodies in flight; retry later", retryAfter: 1) }
        defer { reserved.withLock { $0 -= bytes } }
        return try await body()
    }
}
