import LookupEngine

/// A failure of a durable store (SQLite or PostgreSQL) or of its configuration, with a stable code that logs,
/// metrics and tests can match on. Carries no key, token or user bytes.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' error codes: compare codes, not messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, stable across releases.
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The store's configuration (URL, pool size, key-encryption key file) is invalid.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// The store cannot be reached now (connection refused or lost, timeout); the request may be retried.
        public static let unavailable = Code("unavailable")
        /// The store's schema is newer than this build knows, or a migration failed.
        public static let schema = Code("schema")
        /// A stored value failed its integrity check (wrong key-encryption key, tampered row).
        public static let corrupt = Code("corrupt")
        /// A write only the current leader may make was refused: another process took the lead since.
        public static let fenced = Code("fenced")
        /// A file the store keeps beside its database could not be created, read, written or deleted.
        public static let io = Code("io")
    }

    /// What went wrong, as a stable code.
    public let code: Code
    /// A reason for operators (never secrets).
    public let reason: String
    /// The SQLSTATE of a database server's error, when there was one.
    public let sqlState: String?

    /// An error with a code and a reason.
    public init(_ code: Code, _ reason: String, sqlState: String? = nil) {
        self.code = code
        self.reason = reason
        self.sqlState = sqlState
    }

    public var description: String { "store error \(code): \(reason)" }
}
