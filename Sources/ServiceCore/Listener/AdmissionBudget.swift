import Synchronization

/// A capacity handed out in units and given back when the work that held them ends; work that does not fit is
/// refused at once with 503 and `Retry-After`. The public port uses two: request-body bytes (reserved as they
/// arrive, after the route's cheap checks, by `BodyAdmissionMiddleware` — without a bound a connection cap of 1,024
/// and 10 MiB `/key` bodies would let a flood hold 10 GiB, and without reserving as they arrive a few sockets
/// declaring large bodies and trickling them would hold the whole budget) and requests in progress
/// (`InFlightLimitMiddleware`).
public final class AdmissionBudget: Sendable {
    /// Units that may be held at once.
    public let capacity: Int
    /// The reason a refused request is given.
    public let refusal: String
    private let reserved = Mutex(0)

    /// A budget of `capacity` units; refusals carry `refusal`.
    public init(capacity: Int, refusal: String) {
        self.capacity = capacity
        self.refusal = refusal
    }

    /// Units held now.
    public var inUse: Int { reserved.withLock { $0 } }

    /// Takes `units` if they fit; whether they were taken.
    public func tryReserve(_ units: Int) -> Bool {
        reserved.withLock { used in
            guard used + units <= capacity else { return false }
            used += units
            return true
        }
    }

    /// Gives back `units` taken by `tryReserve`.
    public func release(_ units: Int) {
        guard units > 0 else { return }
        reserved.withLock { $0 -= units }
    }

    /// Runs `body` with `units` held; throws 503 when they do not fit.
    public func with<T>(_ units: Int, _ body: () async throws -> T) async throws -> T {
        let units = max(units, 1)
        let granted = reserved.withLock { used in
            guard used + units <= capacity else { return false }
            used += units
            return true
        }
        guard granted else { throw LookupError.unavailable(refusal, retryAfter: 1) }
        defer { reserved.withLock { $0 -= units } }
        return try await body()
    }
}

extension AdmissionBudget {
    /// The request-body budget of the PIR endpoints: `capacity` bytes.
    public static func bodies(capacity: Int) -> AdmissionBudget {
        AdmissionBudget(capacity: capacity, refusal: "Too many request bodies in flight; retry later")
    }
}
