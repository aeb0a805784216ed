import Foundation
import LookupEngine
import LookupStorage

extension ServiceConfig {
    /// Privacy Pass authentication of the PIR endpoints and token issuance.
    public struct PrivacyPass: Codable, Sendable, Equatable {
        /// Whether PIR requests need a token (default true).
        public var enabled: Bool?
        /// Directory of the issuer keys (default `issuer-keys` next to the config).
        public var keyDirectory: String?
        /// SQLite file of spent nonces (default `nonces.sqlite` next to the config).
        public var nonceDatabase: String?
        /// Validity of each issuer key (default 30 days).
        public var keyLifetimeSeconds: Int?
        /// How long a successor key is published before it issues, and the old key accepted after (default 2 days).
        public var keyOverlapSeconds: Int?
        /// Issuer names a token's challenge may carry (its `challenge_digest` must then be the SHA-256 of the
        /// `TokenChallenge` of one of them, type 2, empty redemption context and origin info). Absent (the default),
        /// any challenge is accepted: the issuer name a device uses is undocumented, and a wrong list refuses it.
        public var issuerNames: [String]?
        /// Spent nonces kept per issuer key before its tokens are refused with 503 (default 100,000,000).
        public var maxNoncesPerKey: Int?

        /// Settings.
        public init(enabled: Bool? = nil, keyDirectory: String? = nil, nonceDatabase: String? = nil,
                    keyLifetimeSeconds: Int? = nil, keyOverlapSeconds: Int? = nil, issuerNames: [String]? = nil,
                    maxNoncesPerKey: Int? = nil) {
            self.enabled = enabled
            self.keyDirectory = keyDirectory
            self.nonceDatabase = nonceDatabase
            self.keyLifetimeSeconds = keyLifetimeSeconds
            self.keyOverlapSeconds = keyOverlapSeconds
            self.issuerNames = issuerNames
            self.maxNoncesPerKey = maxNoncesPerKey
        }
    }
}
