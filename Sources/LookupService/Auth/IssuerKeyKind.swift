import Foundation
import LookupEngine
import LookupProtocol
import LookupStorage
import PrivacyPass

/// Privacy Pass issuer keys as a `RotatingKeyRing` holds them: RSA blind-signing keys stored as PEM, one group per
/// user tier, published ahead: a successor appears in the directory (with `not-before`) `overlap` before it issues,
/// and the old key keeps verifying `overlap` after that, so a device's cached tokens (kept at most 24 h) stay valid
/// across a rotation. Truncated key ids of unexpired keys differ.
public struct IssuerKeyKind: RotatingKeyKind {
    public typealias Key = TokenIssuer
    public typealias Derived = Void

    public var ring: String { "issuer" }
    public var fileSuffix: String { ".pem" }
    public var publishesAhead: Bool { true }

    /// The issuer-key kind.
    public init() {}

    public func identifier(of key: TokenIssuer) -> [UInt8] { key.tokenKey.keyID }

    public func secret(of key: TokenIssuer) -> Data { Data(key.pem.utf8) }

    public func key(identifier: [UInt8]?, secret: Data) throws -> TokenIssuer {
        let issuer: TokenIssuer
        do { issuer = try TokenIssuer(pem: String(decoding: secret, as: UTF8.self)) } catch {
            throw ConfigError("an issuer key does not parse")
        }
        if let identifier, identifier != issuer.tokenKey.keyID { throw ConfigError("an issuer key has another key id than recorded") }
        return issuer
    }

    public func generate(avoiding entries: [RotatingKeyEntry<TokenIssuer>]) throws -> TokenIssuer {
        let taken = Set(entries.map(\.key.tokenKey.truncatedKeyID))
        for _ in 0..<64 {
            let issuer = try TokenIssuer.generate()
            if !taken.contains(issuer.tokenKey.truncatedKeyID) { return issuer }
        }
        throw ConfigError("could not find an issuer key with a free truncated key id")
    }

    public func sealingContext(identifier: [UInt8]) -> [UInt8] { identifier }

    public func derive(from entries: [RotatingKeyEntry<TokenIssuer>]) throws {}
}

/// The Privacy Pass issuer keys, one active key per user tier (`IssuerKeyKind`).
public typealias IssuerKeyRing = RotatingKeyRing<IssuerKeyKind>

extension RotatingKeyRing where Kind == IssuerKeyKind {
    /// An empty ring whose keys live in the shared store (`PostgresRotatingKeyStore` fills and changes it).
    public convenience init(lifetime: TimeInterval = 30 * 86400, overlap: TimeInterval = 2 * 86400,
                            clock: @escaping @Sendable () -> Date = { Date() }) throws {
        try self.init(IssuerKeyKind(), directory: nil, lifetime: lifetime, overlap: overlap, clock: clock)
    }

    /// The ring stored in `directory` (PEM files, mode 0600, listed in `keys.json`); `ensure(tiers:)` creates keys.
    public convenience init(directory: String, lifetime: TimeInterval = 30 * 86400, overlap: TimeInterval = 2 * 86400,
                            clock: @escaping @Sendable () -> Date = { Date() }) throws {
        try self.init(IssuerKeyKind(), directory: directory, lifetime: lifetime, overlap: overlap, clock: clock)
    }

    /// Makes sure every tier has an active key and a successor when due; drops expired keys.
    @discardableResult
    public func ensure(tiers: [String]) throws -> Bool { try ensure(groups: tiers) }

    /// Starts a rotation of `tier` now: the successor is published at once and issues after `overlap`.
    public func rotate(tier: String) throws { try rotate(group: tier) }

    /// The key that issues for a tier now: the newest one whose `notBefore` has passed.
    public func issuer(forTier tier: String) -> TokenIssuer? {
        let now = clock()
        return entries.last { $0.group == tier && $0.notBefore <= now && now < $0.notAfter }?.key
    }

    /// The accepted key with this key id, and its tier.
    public func acceptedKey(keyID: [UInt8]) -> (key: TokenKey, tier: String)? {
        let now = clock()
        return entries.first { $0.key.tokenKey.keyID == keyID && $0.notBefore <= now && now < $0.notAfter }
            .map { ($0.key.tokenKey, $0.group) }
    }

    /// Keys for the issuer directory: every unexpired key, with `notBefore` for those not issuing yet.
    public func published() -> [(key: TokenKey, notBefore: Date?)] {
        let now = clock()
        return entries.filter { now < $0.notAfter }.map { ($0.key.tokenKey, $0.notBefore > now ? $0.notBefore : nil) }
    }

    /// Key ids whose tokens are still accepted or will be (their nonces must be kept).
    public var liveKeyIDs: [[UInt8]] {
        let now = clock()
        return entries.filter { now < $0.notAfter }.map(\.key.tokenKey.keyID)
    }
}
