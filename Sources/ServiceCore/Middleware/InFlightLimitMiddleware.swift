import Hummingbird

/// The first gate of the public port: at most `limit` requests are being handled at once; one more is answered
/// 503 with `Retry-After` before anything is done for it. Every later stage (token verification and the nonce
/// store's writes, body reads, the compute queues) then sees a bounded number of requests, so none of their
/// queues can grow without bound under a flood and a well-behaved client waits behind at most `limit` others.
public struct InFlightLimitMiddleware: RouterMiddleware {
    private let budget: AdmissionBudget

    /// At most `limit` requests at once.
    public init(limit: Int) {
        budget = AdmissionBudget(capacity: max(limit, 1), refusal: "Too many requests in progress; retry later")
    }

    /// Requests handled at once.
    public var limit: Int { budget.capacity }

    /// Requests being handled now.
    public var inFlight: Int { budget.inUse }

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        try await budget.with(1) { try await next(request, context) }
    }
}
