import BFV
import Foundation
import Logging
import LookupEngine
import LookupProtocol
import LookupStorage
import PIR
import ServiceCore

/// The three PIR endpoints of Live Caller ID Lookup as functions of decoded messages (SPEC-PIR §7.4–7.6),
/// independent of HTTP: `/config`, `/key` and `/queries`.
public struct LookupAPI: Sendable {
    /// Bounds on what one request may carry.
    public struct Limits: Sendable {
        /// Largest serialized evaluation key accepted.
        public var maxKeyBytes = 8 << 20
        /// Keys per `/key` request.
        public var maxKeysPerUpload = 16
        /// `Request`s per `/queries` request.
        public var maxRequestsPerQuery = 16
        /// Use cases per `/config` request.
        public var maxUseCasesPerConfig = 64

        /// The defaults.
        public init() {}
    }

    let registry: UseCaseRegistry
    let keyStore: any EvaluationKeyStore
    let keyCache: EvaluationKeyCache
    /// Key timestamps last seen, answered from while the key store is unreachable.
    let knownTimestamps = KnownKeyTimestamps()
    let executor: any ShardExecutor
    let pool: ComputePool
    let limits: Limits
    let metrics: ServiceMetrics
    let logger: Logger
    private let keyUploadBound = KeyUploadBound()

    /// The largest `/key` body read for the use cases loaded now (`KeyUploadBound`).
    public var maxKeyUploadBytes: Int { keyUploadBound.bytes(registry: registry, limits: limits) }

    /// The API over a registry, a key store and an executor.
    public init(registry: UseCaseRegistry, keyStore: any EvaluationKeyStore, keyCache: EvaluationKeyCache,
                executor: any ShardExecutor, pool: ComputePool, limits: Limits = Limits(), metrics: ServiceMetrics,
                logger: Logger) {
        self.registry = registry
        self.keyStore = keyStore
        self.keyCache = keyCache
        self.executor = executor
        self.pool = pool
        self.limits = limits
        self.metrics = metrics
        self.logger = logger
    }

    /// `/config`: the newest config of each selected use case (or the reuse flag when the device's id is
    /// current, ids paired with use cases by position), and the key status of each.
    public func config(_ request: ProtoConfigRequest, user: String, features: ClientFeatures) async throws -> ProtoConfigResponse {
        guard request.usecases.count <= limits.maxUseCasesPerConfig else {
            throw LookupError.badRequest("At most \(limits.maxUseCasesPerConfig) use cases per request")
        }
        guard request.existingConfigIds.isEmpty || request.existingConfigIds.count == request.usecases.count else {
            throw LookupError.badRequest(
                "existing_config_ids has \(request.existingConfigIds.count) entries for \(request.usecases.count) use cases")
        }
        var selected: [(UseCaseVersion, [UInt8]?)] = []
        if request.usecases.isEmpty {
            selected = registry.names.compactMap { name in registry.newest(name).map { ($0, nil) } }
        } else {
            var seen = Set<String>()
            for (index, name) in request.usecases.enumerated() where seen.insert(name).inserted {
                guard let version = registry.newest(name) else { continue }
                let id = request.existingConfigIds.isEmpty ? nil : [UInt8](request.existingConfigIds[index])
                selected.append((version, id))
            }
        }
        var response = ProtoConfigResponse()
        for (version, existing) in selected {
            let configuration = version.configuration
            if existing == configuration.configID {
                response.configs[version.name] = .with { $0.reuseExistingConfig = true }
            } else {
                let pirConfig: ProtoPIRConfig
                do { pirConfig = try configuration.pirConfig(for: features) } catch {
                    throw LookupError(.internalServerError, "Use case \(version.name) cannot be served to this OS version: \(error)")
                }
                response.configs[version.name] = .with {
                    $0.pirConfig = pirConfig
                    $0.configID = Data(configuration.configID)
                }
            }
            let timestamp = try await keyTimestamp(user: user, identifier: configuration.keyConfigHash) ?? 0
            response.keyInfo.append(.with {
                $0.timestamp = timestamp
                $0.keyConfig = configuration.keyConfig
            })
        }
        return response
    }

    /// `/key`: validates each key against the config it claims (parses, has every Galois element and the
    /// relinearization key) and stores it under (user, key-config hash) with its timestamp unchanged.
    public func uploadKeys(_ keys: ProtoEvaluationKeys, user: String, now: Date = Date()) async throws {
        guard !keys.keys.isEmpty else { throw LookupError.badRequest("No evaluation keys in the request") }
        guard keys.keys.count <= limits.maxKeysPerUpload else {
            throw LookupError.badRequest("At most \(limits.maxKeysPerUpload) keys per request")
        }
        var accepted: [(StoredEvaluationKey, EvaluationKey)] = []
        for (index, uploaded) in keys.keys.enumerated() {
            guard uploaded.hasMetadata else { throw LookupError.badRequest("Key \(index) has no metadata") }
            guard uploaded.hasEvaluationKey else { throw LookupError.badRequest("Key \(index) has no evaluation_key") }
            let identifier = [UInt8](uploaded.metadata.identifier)
            guard let version = registry.version(keyConfigHash: identifier) else {
                throw LookupError.badRequest("Key \(index) is for a key config no use case offers")
            }
            let serialized: [UInt8] = try uploaded.evaluationKey.serializedBytes()
            guard serialized.count <= limits.maxKeyBytes else {
                throw LookupError(.contentTooLarge, "Key \(index) has \(serialized.count) bytes; at most \(limits.maxKeyBytes)")
            }
            let context = version.context
            let required = version.configuration.keyConfig.native()
            let message = uploaded.evaluationKey
            let parsed = try await pool.run(lane: .key, owner: user) {
                let key = try message.computeFormKey(context: context)
                let missing = Set(required.galoisElements).subtracting(key.galoisKeys.keys)
                guard missing.isEmpty else {
                    throw LookupError.badRequest("Key \(index) lacks Galois elements \(missing.sorted())")
                }
                if required.hasRelinearizationKey, key.relinearizationKey == nil {
                    throw LookupError.badRequest("Key \(index) lacks the relinearization key")
                }
                return key
            }
            accepted.append((StoredEvaluationKey(user: user, identifier: identifier, timestamp: uploaded.metadata.timestamp,
                                                 uploadedAt: now, serialized: serialized), parsed))
        }
        for (key, parsed) in accepted {
            let usage = try await keyStore.store(key)
            metrics.recordKeyStore(usage)
            if usage.evicted > 0 { logger.notice("Key store full: evicted the \(usage.evicted) keys uploaded longest ago") }
            keyCache.invalidate(user: user, identifier: key.identifier)
            // Where the executors read this cache (in-process or embedded workers), the key parsed to check it is the
            // one they use: the push below then finds it cached instead of parsing it a second time.
            keyCache.put(EvaluationKeyCache.key(user: user, identifier: key.identifier, timestamp: key.timestamp), parsed,
                         bytes: parsed.memoryBytes, uploadedAt: now.timeIntervalSince1970)
            knownTimestamps.record(user: user, identifier: key.identifier, timestamp: key.timestamp)
            await executor.keyUploaded(key)
        }
    }

    /// The timestamp of the stored key for (user, identifier). While the store cannot be reached, the one this
    /// process last saw, so devices it knows keep their answers through an outage of a shared store; for others
    /// the store's error (503).
    func keyTimestamp(user: String, identifier: [UInt8]) async throws -> UInt64? {
        do {
            let timestamp = try await keyStore.timestamp(user: user, identifier: identifier)
            knownTimestamps.record(user: user, identifier: identifier, timestamp: timestamp)
            return timestamp
        } catch let error as StoreError where error.code == .unavailable {
            guard let known = knownTimestamps.timestamp(user: user, identifier: identifier) else { throw error }
            metrics.increment("callveil_key_store_fallbacks_total")
            return known
        }
    }

    /// `/queries`: each request routed to its use-case version and shard, run concurrently, answered in order.
    /// Any failure fails the whole call (the protocol has no per-request errors).
    public func queries(_ requests: ProtoRequests, user: String) async throws -> ProtoResponses {
        guard !requests.requests.isEmpty else { throw LookupError.badRequest("No requests") }
        guard requests.requests.count <= limits.maxRequestsPerQuery else {
            throw LookupError.badRequest("At most \(limits.maxRequestsPerQuery) requests per call")
        }
        let routing = ContinuousClock.now
        var jobs: [ShardQuery] = []
        for request in requests.requests {
            jobs.append(try await route(request, user: user))
        }
        let execution = ContinuousClock.now
        metrics.recordStage(.routing, execution - routing)
        defer { metrics.recordStage(.execution, .now - execution) }
        let replies = try await withThrowingTaskGroup(of: (Int, ProtoPIRResponse).self) { group in
            for (index, job) in jobs.enumerated() {
                group.addTask { (index, try await executor.execute(job)) }
            }
            var out = [ProtoPIRResponse?](repeating: nil, count: jobs.count)
            for try await (index, reply) in group { out[index] = reply }
            return out.compactMap { $0 }
        }
        return .with { $0.responses = replies.map { reply in .with { $0.pirResponse = reply } } }
    }

    private func route(_ request: ProtoRequest, user: String) async throws -> ShardQuery {
        guard case .pirRequest(let pir)? = request.request else {
            throw LookupError.badRequest("Only PIR requests are supported")
        }
        let key: EvaluationKeySource
        let keyIdentifier: [UInt8]
        if pir.hasEvaluationKey {
            guard pir.evaluationKey.hasEvaluationKey, pir.evaluationKey.hasMetadata else {
                throw LookupError.badRequest("Inline evaluation key without key or metadata")
            }
            key = .inline(pir.evaluationKey.evaluationKey)
            keyIdentifier = [UInt8](pir.evaluationKey.metadata.identifier)
        } else {
            let identifier = [UInt8](pir.evaluationKeyMetadata.identifier)
            guard let stored = try await keyTimestamp(user: user, identifier: identifier),
                  stored == pir.evaluationKeyMetadata.timestamp else {
                throw LookupError.evaluationKeyNotFound
            }
            key = .stored(user: user, identifier: identifier, timestamp: stored)
            keyIdentifier = identifier
        }
        guard registry.contains(request.usecase) else { throw LookupError.unknownUseCase }
        let configID = [UInt8](pir.configurationHash)
        guard let version = registry.version(request.usecase, configID: configID) else {
            throw LookupError(.gone, "Configuration id \(configID.prefix(8).hexString)… no longer available")
        }
        guard !pir.hasShardID else { throw LookupError(.notImplemented, "shard_id is not supported; use shard_index") }
        guard keyIdentifier == version.configuration.keyConfigHash else {
            throw LookupError.badRequest("The evaluation key is for another key config than this use case's")
        }
        let shardCount = version.configuration.shards.count
        guard Int(pir.shardIndex) < shardCount else {
            throw LookupError.badRequest("Shard index \(pir.shardIndex) out of range: the use case has \(shardCount) shards")
        }
        guard !pir.query.ciphertexts.isEmpty else { throw LookupError.badRequest("The query has no ciphertexts") }
        return ShardQuery(useCase: request.usecase, configID: configID, shardIndex: Int(pir.shardIndex), query: pir.query, key: key)
    }
}
