import ServiceCore

/// Checks the `Authorization` header of a PIR request (Privacy Pass `PrivateToken token=…`) and returns the
/// user tier of the verified token. Throws `LookupError` with status 401 and the reason otherwise.
public protocol PrivateTokenVerifier: Sendable {
    /// Verifies and spends the token in `authorization`; returns its tier.
    func verify(authorization: String?) async throws -> String
}
