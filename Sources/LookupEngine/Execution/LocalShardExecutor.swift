import BFV
import Foundation
import LookupProtocol
import PIR
import Synchronization

/// Runs shard queries in this process: every shard of every installed version is held in memory, evaluation
/// keys come from the key store through a parsed-key cache, and the PIR core runs on a compute pool.
public final class LocalShardExecutor: ShardExecutor {
    private struct VersionID: Hashable {
        let name: String
        let configID: [UInt8]
    }

    private struct Installed: Sendable {
        let context: Context
        let shardCount: Int
        var servers: [Int: MulPirServer]
    }

    private let installed = Mutex<[VersionID: Installed]>([:])
    private let keyStore: any EvaluationKeyReader
    /// Parsed keys (a worker drops expired ones from it).
    public let cache: EvaluationKeyCache
    /// The compute pool its key parsing and queries run on.
    public let pool: ComputePool
    private let threads: Int?
    private let metrics: ServiceMetrics?

    /// An executor; `threads` per query (default every core), computed on `pool` (the process's one compute
    /// pool, so the configured number of concurrent queries holds for the whole process).
    public init(keyStore: any EvaluationKeyReader, cache: EvaluationKeyCache, pool: ComputePool, threads: Int? = nil,
                metrics: ServiceMetrics? = nil) {
        self.keyStore = keyStore
        self.cache = cache
        self.pool = pool
        self.threads = threads
        self.metrics = metrics
    }

    /// Installs a version shard by shard (one shard's evaluation form read at a time); a new version that fails
    /// part way is removed again, so the versions already serving are all that serve.
    public func install(_ useCase: LoadedUseCase) async throws {
        let version = useCase.version
        let configID = version.configuration.configID
        let existed = installed.withLock { $0[VersionID(name: version.name, configID: configID)] != nil }
        do {
            for source in useCase.shards {
                let threads = self.threads
                let server = try await ComputePool.detached {
                    try MulPirServer(context: version.context, database: try source.load(), threads: threads)
                }
                installServer(useCase: version.name, configID: configID, index: source.index, shardCount: useCase.shards.count,
                              server: server, context: version.context)
            }
        } catch {
            if !existed { await retire(useCase: version.name, configID: configID) }
            throw error
        }
    }

    /// Makes one shard of a version servable (a cluster worker holds only some shards, built or mapped from its
    /// scan-file cache).
    public func installServer(useCase: String, configID: [UInt8], index: Int, shardCount: Int, server: MulPirServer, context: Context) {
        installed.withLock { all in
            let id = VersionID(name: useCase, configID: configID)
            var entry = all[id] ?? Installed(context: context, shardCount: shardCount, servers: [:])
            entry.servers[index] = server
            all[id] = entry
        }
    }

    /// Whether a shard of a version is held here.
    public func holds(useCase: String, configID: [UInt8], index: Int) -> Bool {
        installed.withLock { $0[VersionID(name: useCase, configID: configID)]?.servers[index] != nil }
    }

    /// Stops serving one shard.
    public func dropShard(useCase: String, configID: [UInt8], index: Int) {
        installed.withLock { all in
            let id = VersionID(name: useCase, configID: configID)
            all[id]?.servers.removeValue(forKey: index)
            if all[id]?.servers.isEmpty == true { all.removeValue(forKey: id) }
        }
    }

    /// Parses and caches a pushed key so the first query with it does not wait (a cache shared with the service
    /// already holds the key the upload parsed).
    public func cacheKey(user: String, identifier: [UInt8], timestamp: UInt64, serialized: [UInt8], context: Context,
                         uploadedAt: Double = 0) async throws {
        guard !cache.contains(EvaluationKeyCache.key(user: user, identifier: identifier, timestamp: timestamp)) else { return }
        let key = try await pool.run(lane: .key, owner: user) {
            try ProtoEvaluationKey.computeFormKey(serialized: serialized, context: context)
        }
        cache.put(EvaluationKeyCache.key(user: user, identifier: identifier, timestamp: timestamp), key, bytes: key.memoryBytes,
                  uploadedAt: uploadedAt)
    }

    public func retire(useCase: String, configID: [UInt8]) async {
        _ = installed.withLock { $0.removeValue(forKey: VersionID(name: useCase, configID: configID)) }
    }

    public func execute(_ request: ShardQuery) async throws -> ProtoPIRResponse {
        guard let entry = installed.withLock({ $0[VersionID(name: request.useCase, configID: request.configID)] }) else {
            throw EngineError(.configurationGone, "Configuration id is no longer available")
        }
        guard request.shardIndex >= 0, request.shardIndex < entry.shardCount else {
            throw PIRError.shardIndexOutOfRange(index: request.shardIndex, shardCount: entry.shardCount)
        }
        guard let server = entry.servers[request.shardIndex] else {
            throw EngineError(.shardNotHeld, "Shard \(request.shardIndex) is not held here")
        }
        let context = entry.context
        guard request.query.numPirCalls >= 1, request.query.numPirCalls <= 64 else {
            throw EngineError(.invalidQuery, "Invalid PIR request: num_pir_calls \(request.query.numPirCalls)")
        }
        // One deadline for the whole request: the key phase and the compute phase both start before it or not at all,
        // and a caller that has gone while its key was fetched or parsed gets no compute.
        let deadline = ContinuousClock.now + pool.limits.queueTimeout
        let owner = request.key.user
        let key = try await evaluationKey(request.key, context: context, deadline: deadline)
        try Task.checkCancellation()
        let query = request.query
        let (response, took) = try await runTimed(.compute, owner: owner, deadline: deadline) {
            let ciphertexts = try query.native(context: context)
            let replies = try server.computeResponse(query: ciphertexts, pirCalls: Int(query.numPirCalls), evaluationKey: key)
            return ProtoPIRResponse(replies: replies)
        }
        metrics?.recordCompute(useCase: request.useCase, duration: took)
        return response
    }

    private func evaluationKey(_ source: EvaluationKeySource, context: Context, deadline: ContinuousClock.Instant) async throws
        -> EvaluationKey {
        switch source {
        case .inline(let proto):
            return try await pool.run(deadline: deadline) { try proto.computeFormKey(context: context) }
        case .stored(let user, let identifier, let timestamp):
            let cacheKey = EvaluationKeyCache.key(user: user, identifier: identifier, timestamp: timestamp)
            if let key = cache.get(cacheKey) {
                metrics?.increment("callveil_key_cache_lookups_total", dimensions: [("result", "hit")])
                return key
            }
            metrics?.increment("callveil_key_cache_lookups_total", dimensions: [("result", "miss")])
            let start = ContinuousClock.now
            let found = try await keyStore.key(user: user, identifier: identifier)
            metrics?.recordStage(.keyFetch, .now - start)
            guard let stored = found, stored.timestamp == timestamp else { throw EngineError.evaluationKeyNotFound }
            let (key, _) = try await runTimed(.keyParse, owner: user, deadline: deadline) {
                try ProtoEvaluationKey.computeFormKey(serialized: stored.serialized, context: context)
            }
            cache.put(cacheKey, key, bytes: key.memoryBytes, uploadedAt: stored.uploadedAt.timeIntervalSince1970)
            return key
        }
    }

    /// Runs `work` on a compute slot and records as `stage` the time it held the slot (the wait for the slot is
    /// `queue_wait`), as the span where it ran rather than where the task resumed; returns its result and that time.
    private func runTimed<T: Sendable>(_ stage: LookupStage, owner: String?, deadline: ContinuousClock.Instant,
                                       _ work: @escaping @Sendable () throws -> T) async throws -> (T, Duration) {
        let (result, start, end) = try await pool.run(owner: owner, deadline: deadline) {
            let start = ContinuousClock.now
            let result = try work()
            return (result, start, ContinuousClock.now)
        }
        metrics?.recordStage(stage, end - start, endingAt: end)
        return (result, end - start)
    }
}
