import LookupEngine

/// The spent-token nonces (RFC 9577 double-spend protection). `spend` is atomic: of several concurrent calls
/// with the same nonce exactly one returns true. Nonces are kept per issuer key while that key is accepted, at
/// most a bounded number per key, and forgetting a retired key's nonces is cheap; an interface so several
/// coordinators can share one store.
public protocol NonceStore: Sendable {
    /// Records the nonce as spent; false when it already was. Throws `NonceStoreFull` when the key already
    /// has its maximum of nonces (the token is refused; rotating the issuer key ends it).
    func spend(nonce: [UInt8], keyID: [UInt8]) async throws -> Bool
    /// Forgets the nonces of keys that are no longer accepted (their tokens are refused anyway); an empty list
    /// forgets every key's. Returns the number of nonces forgotten.
    func forget(keyIDsNotIn accepted: [[UInt8]]) async throws -> Int
    /// Number of nonces held.
    func count() async throws -> Int
}

/// An issuer key has spent its maximum of nonces (`privacyPass.maxNoncesPerKey`).
public struct NonceStoreFull: Error, Sendable, Equatable {
    /// The limit.
    public let limit: Int
}
