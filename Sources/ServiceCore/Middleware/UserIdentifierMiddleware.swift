import HTTPTypes
import Hummingbird

/// Requires the `User-Identifier` header (SPEC-PIR §7.2): a short printable string naming the user's key space.
public struct UserIdentifierMiddleware: RouterMiddleware {
    /// The header name.
    public static let header = HTTPField.Name("User-Identifier")!
    /// Longest identifier accepted.
    public static let maxLength = 256

    /// The middleware.
    public init() {}

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        guard let value = request.headers[Self.header], !value.isEmpty else {
            throw LookupError.badRequest("Missing 'User-Identifier' header")
        }
        guard value.utf8.count <= Self.maxLength, value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
            throw LookupError.badRequest("Invalid 'User-Identifier' header")
        }
        var context = context
        context.userIdentifier = value
        return try await next(request, context)
    }
}
