import Hummingbird
import LookupEngine
import ServiceCore

/// First link of the PIR endpoints' chain (SPEC-PIR §7.3): Privacy Pass verification, timed as `token_check`.
public struct PrivateTokenMiddleware: RouterMiddleware {
    /// The verifier.
    public let verifier: any PrivateTokenVerifier
    /// Where the check's time is recorded.
    public let metrics: ServiceMetrics?

    /// Middleware over a verifier.
    public init(verifier: any PrivateTokenVerifier, metrics: ServiceMetrics? = nil) {
        self.verifier = verifier
        self.metrics = metrics
    }

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        var context = context
        let start = ContinuousClock.now
        context.tier = try await verifier.verify(authorization: request.headers[.authorization])
        metrics?.recordStage(.tokenCheck, .now - start)
        return try await next(request, context)
    }
}
