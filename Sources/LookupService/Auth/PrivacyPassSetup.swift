import Foundation
import Logging
import LookupStorage
import ServiceCore
import Synchronization

/// Privacy Pass as one server runs it: the issuer keys and spent nonces (when authentication is on), the issuer
/// names a challenge may carry, the user-token tiers of the current config and `/issue`'s rate per tier.
public final class PrivacyPassSetup: Sendable {
    /// Issuer keys, when authentication is on.
    public let keys: IssuerKeyRing?
    /// Spent token nonces, when authentication is on.
    public let nonces: (any NonceStore)?
    /// Issuer names a token's challenge may carry (nil: any).
    public let issuerNames: [String]?
    /// Spent nonces an issuer key may hold, when authentication is on.
    public let maxNoncesPerKey: Int?
    /// `/issue` rate per user token, by tier.
    public let issuanceLimiter: IssuanceLimiter
    /// The user token → tier map of the current config.
    private let tiers: Mutex<[String: String]>

    /// Opens the keys and nonces where `config` says (the shared store when there is one; the ring then starts
    /// empty and `ensureKeys` loads it).
    init(config: ServiceConfig, shared: PostgresStore?, logger: Logger) throws {
        let settings = config.privacyPass ?? .init()
        issuerNames = settings.issuerNames
        issuanceLimiter = IssuanceLimiter(rates: config.issueRates)
        tiers = Mutex(config.tierByToken)
        guard settings.enabled ?? true else {
            logger.warning("Privacy Pass is disabled: the PIR endpoints accept requests without tokens")
            (keys, nonces, maxNoncesPerKey) = (nil, nil, nil)
            return
        }
        let lifetime = TimeInterval(settings.keyLifetimeSeconds ?? 30 * 86400)
        let overlap = TimeInterval(settings.keyOverlapSeconds ?? 2 * 86400)
        let maxPerKey = settings.maxNoncesPerKey ?? 100_000_000
        maxNoncesPerKey = maxPerKey
        if let shared {
            keys = try IssuerKeyRing(lifetime: lifetime, overlap: overlap)
            nonces = PostgresNonceStore(store: shared, maxPerKey: maxPerKey)
        } else {
            keys = try IssuerKeyRing(directory: settings.keyDirectory ?? "issuer-keys", lifetime: lifetime, overlap: overlap)
            nonces = try SQLiteNonceStore(path: settings.nonceDatabase ?? "nonces.sqlite", maxPerKey: maxPerKey)
        }
        if let names = issuerNames {
            logger.warning("privacyPass.issuerNames is set: tokens whose challenge names another issuer get 401; the issuer name devices use is undocumented, so this may refuse real phones",
                           metadata: ["issuerNames": "\(names.count)"])
        }
    }

    /// Takes a reloaded config's tiers and rates.
    func update(_ config: ServiceConfig) {
        tiers.withLock { $0 = config.tierByToken }
        issuanceLimiter.update(rates: config.issueRates)
    }

    /// The tier of a user token in the current config (nil: unknown token).
    func tier(of userToken: String) -> String? { tiers.withLock { $0[userToken] } }

    /// The tiers of the current config.
    var currentTiers: [String] { Array(Set(tiers.withLock { $0.values })) }

    /// Makes the issuer keys current for `tiers`: in the shared store (decided once for every coordinator, and
    /// loaded with what others decided), else in the key directory. Returns whether keys were created or dropped.
    @discardableResult
    func ensureKeys(tiers: [String], sharedStore: PostgresStore?) async throws -> Bool {
        guard let keys else { return false }
        if let sharedStore { return try await PostgresRotatingKeyStore<IssuerKeyKind>(store: sharedStore).ensure(keys, groups: tiers) }
        return try keys.ensure(tiers: tiers)
    }

    /// The Privacy Pass verifier of the PIR endpoints, when authentication is on.
    public var verifier: PrivacyPassVerifier? {
        guard let keys, let nonces else { return nil }
        return PrivacyPassVerifier(keys: keys, nonces: nonces, issuerNames: issuerNames)
    }
}
