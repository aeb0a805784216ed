/// The spent-token nonces (RFC 9577 double-spend protection). `spend` is atomic: of several concurrent calls
/// with the same nonce exactly one returns true. Nonces are kept while their issuer key is accepted; an
/// interface so several coordinators can share one store.
public protocol NonceStore: Sendable {
    /// Records the nonce as spent; false when it already was.
    func spend(nonce: [UInt8], keyID: [UInt8]) async throws -> Bool
    /// Forgets the nonces of keys that are no longer accepted (their tokens are refused anyway).
    func forget(keyIDsNotIn accepted: [[UInt8]]) async throws -> Int
    /// Number of nonces held.
    func count() async throws -> Int
}
