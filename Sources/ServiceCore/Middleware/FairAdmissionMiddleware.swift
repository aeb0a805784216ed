import Hummingbird

/// The public port's `FairAdmission` gate on a PIR route, by User-Identifier (requests without one share the
/// anonymous turn). Two steps: `precheck` first of all, refusing at once a request whose turn would come too late
/// before its token is verified or its body read; `turn` after the body read, where the request waits for its slot
/// and holds it while it is handled (so a client still sending holds no slot).
public struct FairAdmissionMiddleware: RouterMiddleware {
    /// Where in the chain the middleware is.
    public enum Step: Sendable {
        /// The cheap estimate, before the header checks.
        case precheck
        /// The wait for a slot, after the body read.
        case turn
    }

    /// The gate, shared by every router of the port (the gateway's inner requests included).
    public let gate: FairAdmission
    /// This middleware's step.
    public let step: Step

    /// The `step` of `gate`.
    public init(gate: FairAdmission, step: Step) {
        self.gate = gate
        self.step = step
    }

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        switch step {
        case .precheck:
            // An invalid header is refused by UserIdentifierMiddleware later; here it is the anonymous owner.
            try gate.precheck(owner: UserIdentifierMiddleware.plausible(in: request) ?? "")
            return try await next(request, context)
        case .turn:
            return try await gate.admit(owner: context.userIdentifier ?? "") { try await next(request, context) }
        }
    }
}
