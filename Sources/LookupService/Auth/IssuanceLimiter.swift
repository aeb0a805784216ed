import Foundation
import Synchronization

/// Bounds token issuance per user token with a token bucket per tier setting (`users[].issuePerSecond`,
/// `issueBurst`): one app token cannot mint unlimited Privacy Pass tokens. Tiers without a rate are not limited.
/// Buckets of user tokens not seen for ten minutes are forgotten, so memory stays bounded by active tokens.
public final class IssuanceLimiter: Sendable {
    /// A tier's rate.
    public struct Rate: Sendable, Equatable {
        /// Tokens per second, sustained.
        public var perSecond: Double
        /// Tokens issued at once after idleness.
        public var burst: Double

        /// A rate.
        public init(perSecond: Double, burst: Double) {
            self.perSecond = perSecond
            self.burst = max(burst, 1)
        }
    }

    struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let rates: Mutex<[String: Rate]>
    private let buckets = Mutex<[String: Bucket]>([:])
    private let clock: @Sendable () -> ContinuousClock.Instant

    /// A limiter with a rate per tier.
    public init(rates: [String: Rate], clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.rates = Mutex(rates)
        self.clock = clock
    }

    /// Replaces the rates (a config reload); buckets keep their levels.
    public func update(rates: [String: Rate]) { self.rates.withLock { $0 = rates } }

    /// Takes one issuance for `userToken`: nil when allowed, else the seconds to wait (at least 1).
    public func take(userToken: String, tier: String) -> Int? {
        guard let rate = rates.withLock({ $0[tier] }) else { return nil }
        let now = clock()
        return buckets.withLock { buckets in
            if buckets.count > 100_000 {  // forget idle buckets (full again by now anyway)
                buckets = buckets.filter { now - $0.value.updated < .seconds(600) }
            }
            var bucket = buckets[userToken] ?? Bucket(tokens: rate.burst, updated: now)
            bucket.tokens = min(rate.burst, bucket.tokens + (now - bucket.updated) / .seconds(1) * rate.perSecond)
            bucket.updated = now
            defer { buckets[userToken] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            guard rate.perSecond > 0 else { return 3600 }
            return max(Int(((1 - bucket.tokens) / rate.perSecond).rounded(.up)), 1)
        }
    }
}
