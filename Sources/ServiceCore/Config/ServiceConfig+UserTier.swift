import Foundation
import LookupEngine
import LookupStorage

extension ServiceConfig {
    /// A user tier and the user tokens (standard base64 strings) that belong to it.
    public struct UserTier: Codable, Sendable, Equatable {
        /// Tier name, e.g. `tier1`.
        public var tier: String
        /// User tokens of the tier, compared verbatim with the `Bearer` value.
        public var tokens: [String]
        /// Privacy Pass tokens `/issue` gives each user token per second, sustained (absent: no limit).
        public var issuePerSecond: Double?
        /// Tokens a user token may get at once after idleness (default 10 × `issuePerSecond`, at least 10).
        public var issueBurst: Int?

        /// A tier.
        public init(tier: String, tokens: [String], issuePerSecond: Double? = nil, issueBurst: Int? = nil) {
            self.tier = tier
            self.tokens = tokens
            self.issuePerSecond = issuePerSecond
            self.issueBurst = issueBurst
        }
    }

    /// Where a user token is not standard base64 (padded, no whitespace), by tier and position in its list: iOS
    /// does not use Privacy Pass with such a token (pir-service-example #115), so the app's phones would get no
    /// lookups. Warned about at start and reload, not refused: the token still works for other clients.
    public var userTokensNotBase64: [(tier: String, position: Int)] {
        users.flatMap { tier in
            tier.tokens.enumerated().compactMap { position, token in
                token.isEmpty || Data(base64Encoded: token) == nil ? (tier.tier, position) : nil
            }
        }
    }
}
