import Foundation
import LookupEngine
import LookupStorage

extension ServiceConfig {
    /// Where and how evaluation keys are kept.
    public struct Keys: Codable, Sendable, Equatable {
        /// SQLite database file (default `keys.sqlite` next to the config).
        public var database: String?
        /// Keys older than this many seconds (since upload) are expired and reported missing (default 30 days).
        public var maxAgeSeconds: Int?
        /// Largest accepted serialized evaluation key, in bytes (default 8 MiB).
        public var maxKeyBytes: Int?
        /// Memory for parsed keys kept ready for queries, in MiB (default 512).
        public var cacheMegabytes: Int?
        /// The accepted values of `cacheMegabytes` (and of `callveil worker --key-cache`).
        public static let cacheMegabytesRange = 0...(1 << 24)
        /// Total size of the stored keys, in MiB; beyond it the keys uploaded longest ago are evicted (default 32,768).
        public var maxStoredMegabytes: Int?

        /// Key settings.
        public init(database: String? = nil, maxAgeSeconds: Int? = nil, maxKeyBytes: Int? = nil, cacheMegabytes: Int? = nil,
                    maxStoredMegabytes: Int? = nil) {
            self.database = database
            self.maxAgeSeconds = maxAgeSeconds
            self.maxKeyBytes = maxKeyBytes
            self.cacheMegabytes = cacheMegabytes
            self.maxStoredMegabytes = maxStoredMegabytes
        }
    }
}
