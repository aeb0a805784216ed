import Hummingbird
import LookupEngine

/// Answers 413 to a request whose declared `Content-Length` exceeds the route's limit, first of all: the cheapest
/// check there is, so an oversized upload costs neither a Privacy Pass verification nor its token's nonce.
/// `BodyAdmissionMiddleware` still bounds the bytes that actually arrive (a body without a declared length).
public struct DeclaredLengthMiddleware: RouterMiddleware {
    /// The route's largest body now.
    package let limit: @Sendable () -> Int

    /// Requests declaring more than `limit()` bytes are refused.
    public init(limit: @escaping @Sendable () -> Int) { self.limit = limit }

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        let limit = self.limit()
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            throw LookupError(.contentTooLarge, "Request body exceeds \(limit) bytes")
        }
        return try await next(request, context)
    }
}
