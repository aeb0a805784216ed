import LookupProtocol

/// Which evaluation key a shard query uses: one the device uploaded (looked up where the query runs), or one
/// sent inline with the request.
public enum EvaluationKeySource: Sendable {
    /// A stored key: (User-Identifier, key-config hash) and the timestamp the device believes the server holds.
    case stored(user: String, identifier: [UInt8], timestamp: UInt64)
    /// `PIRRequest.evaluation_key`, which overrides any stored key.
    case inline(ProtoEvaluationKey)

    /// The User-Identifier of a stored key (its queries' turn in the compute pool); nil for an inline key.
    public var user: String? {
        if case .stored(let user, _, _) = self { return user }
        return nil
    }
}

/// One `PIRRequest` routed to a shard of a use-case version.
public struct ShardQuery: Sendable {
    /// Use-case name.
    public let useCase: String
    /// The config id the query was built for.
    public let configID: [UInt8]
    /// The shard index.
    public let shardIndex: Int
    /// The encrypted query.
    public let query: ProtoEncryptedIndices
    /// The evaluation key to use.
    public let key: EvaluationKeySource

    /// A shard query.
    public init(useCase: String, configID: [UInt8], shardIndex: Int, query: ProtoEncryptedIndices, key: EvaluationKeySource) {
        self.useCase = useCase
        self.configID = configID
        self.shardIndex = shardIndex
        self.query = query
        self.key = key
    }
}

/// Where shard queries run. The HTTP layer only talks to this interface: the single-host service runs the PIR
/// core in-process (`LocalShardExecutor`); a cluster routes the same calls to workers.
public protocol ShardExecutor: Sendable {
    /// Makes a loaded use-case version's shards servable.
    func install(_ useCase: LoadedUseCase) async throws
    /// Stops serving a version (it was superseded or its use case removed).
    func retire(useCase: String, configID: [UInt8]) async
    /// Answers one shard query.
    func execute(_ query: ShardQuery) async throws -> ProtoPIRResponse
    /// A key was stored (a cluster pushes it to its workers).
    func keyUploaded(_ key: StoredEvaluationKey) async
    /// A JSON object describing the executor for `/healthz` (a cluster lists its workers), or nil.
    var healthJSON: String? { get }
    /// Installed shards that cannot be queried now (a cluster's shards no connected worker holds): `/readyz`
    /// is not ready while any are.
    var unservedShards: Int { get }
    /// The service config was re-read (SIGHUP): re-read whatever the executor configures itself from (a
    /// coordinator re-reads its worker allow-list).
    func configurationReloaded() async
    /// Stops executing: queries in flight fail, sockets close. Idempotent.
    func stop() async
}

extension ShardExecutor {
    /// Nothing to do where queries find keys in the store directly.
    public func keyUploaded(_ key: StoredEvaluationKey) async {}
    /// Nothing to add by default.
    public var healthJSON: String? { nil }
    /// An in-process executor serves what it installed.
    public var unservedShards: Int { 0 }
    /// Nothing to re-read by default.
    public func configurationReloaded() async {}
    /// Nothing to stop by default.
    public func stop() async {}
}
