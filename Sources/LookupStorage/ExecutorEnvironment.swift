import LookupEngine

/// What a shard executor is built over: the service's evaluation-key store, and the shared PostgreSQL store
/// when the config names one (a cluster coordinator keeps its desired state and leadership there).
public struct ExecutorEnvironment: Sendable {
    /// Evaluation keys (a worker that misses a key asks the coordinator, which reads it here).
    public let keyStore: any EvaluationKeyStore
    /// The shared store, or nil with SQLite files.
    public let sharedStore: PostgresStore?

    /// An environment.
    public init(keyStore: any EvaluationKeyStore, sharedStore: PostgresStore?) {
        self.keyStore = keyStore
        self.sharedStore = sharedStore
    }
}
