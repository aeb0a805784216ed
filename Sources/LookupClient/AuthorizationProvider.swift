/// Supplies the `Authorization` header of each PIR request (a fresh Privacy Pass token per request).
public protocol AuthorizationProvider: Sendable {
    /// The header value for the next request, or nil to send none.
    func authorization() async throws -> String?
}

/// Sends no `Authorization` header (servers without authentication).
public struct NoAuthorization: AuthorizationProvider {
    /// The provider.
    public init() {}
    public func authorization() async throws -> String? { nil }
}
