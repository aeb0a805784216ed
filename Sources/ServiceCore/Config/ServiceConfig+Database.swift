import Foundation
import LookupEngine
import LookupStorage

extension ServiceConfig {
    /// The shared PostgreSQL store of a multi-coordinator deployment; absent, the stores are SQLite files on
    /// this host. In the file either a URL string or an object with the URL and settings.
    public struct Database: Codable, Sendable, Equatable {
        /// `postgres://user@host:port/database` (`?sslmode=disable|prefer|require`).
        public var url: String
        /// Connections per process at most (default 16).
        public var poolSize: Int?
        /// File holding the role's password (instead of one in the URL).
        public var passwordFile: String?
        /// File of the key-encryption key that seals evaluation keys at rest (default `store.kek` next to the
        /// config; `callveil store-key` makes one). Every coordinator of a deployment needs the same one.
        public var keyEncryptionKeyFile: String?
        /// Seconds one store operation may take before the request is answered 503 (default 3).
        public var operationTimeoutSeconds: Double?

        /// Settings for the store at `url`.
        public init(url: String, poolSize: Int? = nil, passwordFile: String? = nil, keyEncryptionKeyFile: String? = nil,
                    operationTimeoutSeconds: Double? = nil) {
            self.url = url
            self.poolSize = poolSize
            self.passwordFile = passwordFile
            self.keyEncryptionKeyFile = keyEncryptionKeyFile
            self.operationTimeoutSeconds = operationTimeoutSeconds
        }

        private enum CodingKeys: String, CodingKey { case url, poolSize, passwordFile, keyEncryptionKeyFile, operationTimeoutSeconds }

        public init(from decoder: any Decoder) throws {
            if let url = try? decoder.singleValueContainer().decode(String.self) {
                self.init(url: url)
                return
            }
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(url: try c.decode(String.self, forKey: .url), poolSize: try c.decodeIfPresent(Int.self, forKey: .poolSize),
                      passwordFile: try c.decodeIfPresent(String.self, forKey: .passwordFile),
                      keyEncryptionKeyFile: try c.decodeIfPresent(String.self, forKey: .keyEncryptionKeyFile),
                      operationTimeoutSeconds: try c.decodeIfPresent(Double.self, forKey: .operationTimeoutSeconds))
        }

        /// The connection settings (the password file read, the URL checked).
        public func settings() throws -> PostgresSettings {
            var settings = try PostgresSettings(url: url, poolSize: poolSize ?? PostgresSettings.defaultPoolSize, passwordFile: passwordFile)
            if let seconds = operationTimeoutSeconds { settings.operationTimeout = .milliseconds(Int64(seconds * 1000)) }
            return settings
        }
    }
}
