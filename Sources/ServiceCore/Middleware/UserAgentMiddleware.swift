import Hummingbird

/// Requires `User-Agent` (SPEC-PIR §7.2) and records which config features the client's OS version has.
public struct UserAgentMiddleware: RouterMiddleware {
    /// The middleware.
    public init() {}

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        guard let value = request.headers[.userAgent], !value.isEmpty else {
            throw LookupError.badRequest("Missing 'User-Agent' header")
        }
        var context = context
        context.features = Platform.features(userAgent: value)
        return try await next(request, context)
    }
}
