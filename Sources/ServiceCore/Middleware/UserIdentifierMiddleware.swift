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

    /// The header's value when present and not too long, for the limits that run before it is checked in full; nil
    /// otherwise (this middleware refuses it later).
    public static func plausible(in request: Request) -> String? {
        guard let value = request.headers[header], !value.isEmpty, value.utf8.count <= maxLength else { return nil }
        return value
    }

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
