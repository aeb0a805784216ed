import ServiceCore

extension ServiceConfig {
    /// The `/issue` rate of each tier that has one.
    public var issueRates: [String: IssuanceLimiter.Rate] {
        var rates: [String: IssuanceLimiter.Rate] = [:]
        for tier in users {
            guard let perSecond = tier.issuePerSecond else { continue }
            rates[tier.tier] = .init(perSecond: perSecond, burst: Double(tier.issueBurst ?? max(Int(perSecond * 10), 10)))
        }
        return rates
    }
}
