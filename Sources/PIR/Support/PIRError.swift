/// Errors of the keyword-PIR layer: bad parameters, malformed queries, databases or buckets, and memory the
/// computation could not get.
public struct PIRError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' `CertificateError`: compare codes, not messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case invalidParameters, invalidQuery, shardIndexOutOfRange, malformedDatabase, missingEvaluationKey,
                 invalidDatabase, outOfMemory
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// PIR parameters that cannot work (dimensions, sizes, counts).
        public static let invalidParameters = Code(.invalidParameters)
        /// A query that does not fit the shard's parameters (ciphertext count, batch size, moduli).
        public static let invalidQuery = Code(.invalidQuery)
        /// A shard index outside `0..<shardCount`.
        public static let shardIndexOutOfRange = Code(.shardIndexOutOfRange)
        /// A processed database file or bucket that cannot be parsed.
        public static let malformedDatabase = Code(.malformedDatabase)
        /// The evaluation key lacks what the computation needs.
        public static let missingEvaluationKey = Code(.missingEvaluationKey)
        /// Input rows that cannot be processed (duplicates, oversized values, placement failure).
        public static let invalidDatabase = Code(.invalidDatabase)
        /// The process could not map the memory a query's computation needs (a condition of the host, not of the
        /// input).
        public static let outOfMemory = Code(.outOfMemory)
    }

    /// What went wrong.
    public let code: Code
    /// The reason, for logs and clients (never secrets).
    public let description: String

    private init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// PIR parameters that cannot work (dimensions, sizes, counts).
    public static func invalidParameters(_ why: String) -> PIRError {
        PIRError(.invalidParameters, "invalid PIR parameters: \(why)")
    }

    /// A query that does not fit the shard's parameters (ciphertext count, batch size, moduli).
    public static func invalidQuery(_ why: String) -> PIRError {
        PIRError(.invalidQuery, "invalid PIR query: \(why)")
    }

    /// A shard index outside `0..<shardCount`.
    public static func shardIndexOutOfRange(index: Int, shardCount count: Int) -> PIRError {
        PIRError(.shardIndexOutOfRange, "shard index \(index) is not below the shard count \(count)")
    }

    /// A processed database file or bucket that cannot be parsed.
    public static func malformedDatabase(_ why: String) -> PIRError {
        PIRError(.malformedDatabase, "malformed processed database: \(why)")
    }

    /// The evaluation key lacks what the computation needs.
    public static func missingEvaluationKey(_ why: String) -> PIRError {
        PIRError(.missingEvaluationKey, "evaluation key incomplete: \(why)")
    }

    /// Input rows that cannot be processed (duplicates, oversized values, placement failure).
    public static func invalidDatabase(_ why: String) -> PIRError {
        PIRError(.invalidDatabase, "invalid keyword database: \(why)")
    }

    /// The process could not map the memory a query's computation needs (a condition of the host, not of the
    /// input).
    public static func outOfMemory(_ why: String) -> PIRError {
        PIRError(.outOfMemory, "out of memory: \(why)")
    }
}
