import Hummingbird
import ServiceCore

/// First link of the PIR endpoints' chain (SPEC-PIR §7.3): Privacy Pass verification.
public struct PrivateTokenMiddleware: RouterMiddleware {
    /// The verifier.
    public let verifier: any PrivateTokenVerifier

    /// Middleware over a verifier.
    public init(verifier: any PrivateTokenVerifier) {
        self.verifier = verifier
    }

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        var context = context
        context.tier = try await verifier.verify(authorization: request.headers[.authorization])
        return try await next(request, context)
    }
}
