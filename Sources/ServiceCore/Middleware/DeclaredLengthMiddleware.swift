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
        if Self.declaresMore(request, than: limit) { throw LookupError.contentTooLarge(limit: limit) }
        return try await next(request, context)
    }

    /// Whether `request` declares a body longer than `limit` bytes: the one rule every body bound applies first.
    package static func declaresMore(_ request: Request, than limit: Int) -> Bool {
        guard let declared = request.headers[.contentLength].flatMap({ Int($0) }) else { return false }
        return declared > limit
    }
}
