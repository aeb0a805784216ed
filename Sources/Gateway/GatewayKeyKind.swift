import Crypto
import Foundation
import LookupEngine
import LookupStorage
import ObliviousHTTP

/// Oblivious HTTP gateway keys as a `RotatingKeyRing` holds them: raw X25519 private keys with a one-byte key
/// identifier, one group, used from their creation. The ring derives the gateway that opens requests to any
/// unexpired key; clients take the newest configuration, so a successor is used as soon as it is published and
/// the old key keeps opening requests for `overlap`. Key identifiers of unexpired keys differ.
public struct GatewayKeyKind: RotatingKeyKind {
    public typealias Key = OHTTPGatewayKey
    public typealias Derived = OHTTPGateway?

    /// Suites every key offers.
    public let suites: [OHTTPSuite]
    /// Largest encapsulated request the gateway opens.
    public let maxRequestBytes: Int

    public var ring: String { "gateway" }
    public var fileSuffix: String { ".x25519" }
    public var publishesAhead: Bool { false }

    /// Keys offering `suites`, opening requests of at most `maxRequestBytes`.
    public init(suites: [OHTTPSuite], maxRequestBytes: Int) throws {
        guard !suites.isEmpty, suites.allSatisfy(\.isSupported) else { throw ConfigError("gateway keys need supported suites") }
        self.suites = suites
        self.maxRequestBytes = maxRequestBytes
    }

    public func identifier(of key: OHTTPGatewayKey) -> [UInt8] { [key.keyID] }

    public func secret(of key: OHTTPGatewayKey) -> Data { key.privateKey.rawRepresentation }

    public func key(identifier: [UInt8]?, secret: Data) throws -> OHTTPGatewayKey {
        guard let identifier, identifier.count == 1 else { throw ConfigError("a gateway key has no one-byte key identifier") }
        let privateKey: Curve25519.KeyAgreement.PrivateKey
        do { privateKey = try .init(rawRepresentation: secret) } catch {
            throw ConfigError("gateway key \(identifier[0]) is not an X25519 private key")
        }
        return try OHTTPGatewayKey(keyID: identifier[0], privateKey: privateKey, suites: suites)
    }

    /// A key whose identifier follows the newest key's and is not in use.
    public func generate(avoiding entries: [RotatingKeyEntry<OHTTPGatewayKey>]) throws -> OHTTPGatewayKey {
        let taken = Set(entries.map(\.key.keyID))
        let start = entries.last.map { Int($0.key.keyID) + 1 } ?? Int.random(in: 0...255)
        guard let id = (0..<256).lazy.map({ UInt8((start + $0) % 256) }).first(where: { !taken.contains($0) }) else {
            throw ConfigError("every gateway key identifier is in use")
        }
        do { return try OHTTPGatewayKey.generate(keyID: id, suites: suites) } catch {
            throw ConfigError("cannot create a gateway key: \(error)")
        }
    }

    public func sealingContext(identifier: [UInt8]) -> [UInt8] { Array("callveil gateway key".utf8) + identifier }

    /// The gateway over every key held, newest first.
    public func derive(from entries: [RotatingKeyEntry<OHTTPGatewayKey>]) throws -> OHTTPGateway? {
        entries.isEmpty ? nil : try OHTTPGateway(keys: entries.reversed().map(\.key), maxRequestBytes: maxRequestBytes)
    }
}

/// The Oblivious HTTP gateway's keys (`GatewayKeyKind`): raw X25519 files in a key directory, or rows sealed in
/// the shared store.
public typealias GatewayKeyRing = RotatingKeyRing<GatewayKeyKind>

extension RotatingKeyRing where Kind == GatewayKeyKind {
    /// An empty ring (`directory` nil: the shared store fills it) or the ring stored in `directory`; `ensure()`
    /// (or `ensure(sharedStore:)`) creates keys.
    public convenience init(directory: String?, lifetime: TimeInterval = 30 * 86400, overlap: TimeInterval = 2 * 86400,
                            suites: [OHTTPSuite] = [.x25519AES128GCM, .x25519ChaChaPoly], maxRequestBytes: Int = (10 << 20) + (64 << 10),
                            clock: @escaping @Sendable () -> Date = { Date() }) throws {
        try self.init(try GatewayKeyKind(suites: suites, maxRequestBytes: maxRequestBytes), directory: directory,
                      lifetime: lifetime, overlap: overlap, clock: clock)
    }

    /// The gateway over the unexpired keys (nil before any key exists).
    public var gateway: OHTTPGateway? { derived }

    /// The configurations to publish: every unexpired key, newest first (clients take the first they support).
    public var publishedConfigs: [UInt8] {
        let now = clock()
        return OHTTPKeyConfig.encodeList(entries.reversed().filter { now < $0.notAfter }.map(\.key.config))
    }

    /// Whether the key with identifier `keyID` is held but past its `notAfter` now: its requests are refused at
    /// once, not only after the next maintenance pass drops it.
    public func hasExpired(keyID: UInt8) -> Bool {
        let now = clock()
        return entries.contains { $0.key.keyID == keyID && now >= $0.notAfter }
    }

    /// Seconds a client may cache the configurations: half the overlap, at most a day.
    public var cacheSeconds: Int { Int(min(overlap / 2, 86400)) }

    /// Drops expired keys and creates the first key or a successor when due, in the key directory.
    @discardableResult
    public func ensure() throws -> Bool { try ensure(groups: [""]) }

    /// Publishes a successor now: the current keys stay accepted for `overlap` from now at most.
    public func rotate() throws { try rotate(group: "") }

    /// Makes the keys current where they live: once for every gateway in `sharedStore`, else in the key directory;
    /// returns whether they changed.
    @discardableResult
    public func ensure(sharedStore: PostgresStore?) async throws -> Bool {
        if let sharedStore { return try await PostgresRotatingKeyStore<GatewayKeyKind>(store: sharedStore).ensure(self, groups: [""]) }
        return try ensure()
    }
}
