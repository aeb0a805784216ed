/// Why the engine could not answer a shard query or load a use case, with a stable code that the HTTP service maps
/// to a status and the cluster carries 1:1 as its error code. In the manner of swift-certificates'
/// `CertificateError`: compare codes, not messages. The message is safe to show to a client (never key, token or
/// ciphertext bytes).
public struct EngineError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, CaseIterable, Sendable {
            case unknownUseCase, configurationGone, shardNotHeld, invalidQuery, evaluationKeyNotFound, overloaded,
                 unavailable, cancelled, unloadable, `internal`
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }

        /// The code's name, stable across releases.
        public var description: String { base.rawValue }

        /// The code named `name`, if this build knows it.
        public init?(name: String) {
            guard let base = Base(rawValue: name) else { return nil }
            self.base = base
        }

        /// Every code this build knows.
        public static var all: [Code] { Base.allCases.map(Code.init) }

        /// The query names a use case this process does not have.
        public static let unknownUseCase = Code(.unknownUseCase)
        /// The query's config id is not (or no longer) served: the device refreshes its config.
        public static let configurationGone = Code(.configurationGone)
        /// The shard is not held where the query ran (a cluster tries another replica).
        public static let shardNotHeld = Code(.shardNotHeld)
        /// The query or key is malformed or does not fit the shard's parameters.
        public static let invalidQuery = Code(.invalidQuery)
        /// No usable evaluation key: the device re-syncs its key through `/config` and `/key`.
        public static let evaluationKeyNotFound = Code(.evaluationKeyNotFound)
        /// Saturated now (queue full or its deadline passed, no replica with capacity); retry after a moment.
        public static let overloaded = Code(.overloaded)
        /// A part the query needs (the key store, a replica, the coordinator) cannot be reached now.
        public static let unavailable = Code(.unavailable)
        /// The caller went away before the query ran.
        public static let cancelled = Code(.cancelled)
        /// A use case's files could not be loaded (missing, damaged, or not matching their manifest).
        public static let unloadable = Code(.unloadable)
        /// A failure the engine did not expect.
        public static let `internal` = Code(.internal)
    }

    /// What went wrong.
    public let code: Code
    /// The reason, safe to show to a client.
    public let message: String

    /// An error with a code and a reason.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// No usable evaluation key (the message the reference service answers).
    public static let evaluationKeyNotFound = EngineError(.evaluationKeyNotFound, "Evaluation key not found")
    /// The request names a use case the service does not have.
    public static let unknownUseCase = EngineError(.unknownUseCase, "Unknown usecase")
}
