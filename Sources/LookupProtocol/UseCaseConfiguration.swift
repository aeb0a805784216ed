import BFV
import Crypto
import PIR
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The configuration a use case advertises, built from its shards' `PirParameters` exactly as the reference
/// service builds it (SPEC-PIR §6.1–6.3): the `PIRConfig`, its `config_id`, and the evaluation-key config devices
/// must satisfy, with its hash.
public struct UseCaseConfiguration: Sendable {
    /// The canonical `PIRConfig` (compact shard form when every shard is identical).
    public let pirConfig: ProtoPIRConfig
    /// `SHA256(serialize(pirConfig))`: the opaque version id devices echo back.
    public let configID: [UInt8]
    /// Union of the shards' key configs (Galois elements sorted ascending, relinearization key OR-ed).
    public let keyConfig: EvaluationKeyConfigMessage
    /// `SHA256(serialize(keyConfig))`: the identifier of the devices' evaluation keys.
    public let keyConfigHash: [UInt8]
    /// Per-shard index-PIR parameters.
    public let shards: [MulPirParameters]
    /// How keywords map to shards.
    public let sharding: ShardingFunction
    /// The BFV parameters shared by every shard.
    public let encryption: EncryptionParameters

    /// Builds the configuration from the per-shard parameter files (shard order).
    public init(shardParameters: [ProtoPirParameters]) throws {
        guard let first = shardParameters.first else { throw ProtocolError.missingField("a use case needs at least one shard") }
        guard shardParameters.count <= Self.maxShardCount else {
            throw ProtocolError.invalidField("\(shardParameters.count) shards; at most \(Self.maxShardCount)")
        }
        let encryption = try first.encryptionParameters.native()
        let sharding = try first.shardingFunction()
        var shards: [MulPirParameters] = []
        var galois = Set<UInt32>()
        var relin = false
        for (index, parameters) in shardParameters.enumerated() {
            let native = try parameters.native()
            guard native.encryption == encryption else {
                throw ProtocolError.invalidField("shard \(index) has other encryption parameters than shard 0")
            }
            guard try parameters.shardingFunction() == sharding,
                  parameters.keywordPirParams.numHashFunctions == first.keywordPirParams.numHashFunctions else {
                throw ProtocolError.invalidField("shard \(index) has another keyword-PIR configuration than shard 0")
            }
            let keyConfig = Self.keyConfig(of: parameters, native: native)
            galois.formUnion(keyConfig.galoisElements)
            relin = relin || keyConfig.hasRelinKey_p
            shards.append(native)
        }
        var keyConfig = EvaluationKeyConfigMessage()
        keyConfig.encryptionParameters = first.encryptionParameters
        keyConfig.galoisElements = galois.sorted()
        keyConfig.hasRelinKey_p = relin
        let keyConfigHash = Array(SHA256.hash(data: try keyConfig.serializedBytes() as [UInt8]))

        var config = ProtoPIRConfig()
        config.encryptionParameters = first.encryptionParameters
        config.keywordPirParams = .with {
            $0.numHashFunctions = first.keywordPirParams.numHashFunctions
            $0.shardingFunction = first.keywordPirParams.shardingFunction
        }
        config.algorithm = .mulPir
        config.batchSize = first.batchSize
        config.evaluationKeyConfigHash = Data(keyConfigHash)
        let shardConfigs = zip(shardParameters, shards).map { Self.shardConfig($0.1) }
        let keyConfigs = zip(shardParameters, shards).map { Self.keyConfig(of: $0.0, native: $0.1) }
        let identical = shards.count > 1 && shards.allSatisfy { $0 == shards[0] } && keyConfigs.allSatisfy { $0 == keyConfigs[0] }
        if identical {
            config.pirShardConfigs = .with {
                $0.repeatedShardConfig = .with {
                    $0.shardConfig = shardConfigs[0]
                    $0.shardCount = UInt32(shards.count)
                }
            }
        } else {
            config.shardConfigs = shardConfigs
        }
        self.pirConfig = config
        self.configID = Array(SHA256.hash(data: try config.serializedBytes() as [UInt8]))
        self.keyConfig = keyConfig
        self.keyConfigHash = keyConfigHash
        self.shards = shards
        self.sharding = sharding
        self.encryption = encryption
    }

    /// The most shards a use case may have.
    public static let maxShardCount = 1 << 16

    /// The config for a client: the canonical one, or expanded for clients without fixed shard configs
    /// (SPEC-PIR §7.7). The id does not change. Throws when the client cannot express the sharding function.
    public func pirConfig(for features: ClientFeatures) throws -> ProtoPIRConfig {
        if case .doubleMod = sharding, !features.doubleModSharding {
            throw ProtocolError.invalidField("this use case shards with double_mod, which the client's OS version does not support")
        }
        guard !features.fixedShardConfig, case .repeatedShardConfig(let fixed)? = pirConfig.pirShardConfigs.shardConfigs else {
            return pirConfig
        }
        var expanded = pirConfig
        expanded.clearPirShardConfigs()
        expanded.shardConfigs = Array(repeating: fixed.shardConfig, count: Int(fixed.shardCount))
        return expanded
    }

    static func shardConfig(_ p: MulPirParameters) -> ProtoPIRShardConfig {
        .with {
            $0.numEntries = UInt64(p.entryCount)
            $0.entrySize = UInt64(p.entrySize)
            $0.dimensions = p.dimensions.map { UInt64($0) }
            $0.shardID = ""
        }
    }

    static func keyConfig(of parameters: ProtoPirParameters, native: MulPirParameters) -> EvaluationKeyConfigMessage {
        if parameters.hasEvaluationKeyConfig { return parameters.evaluationKeyConfig }
        return EvaluationKeyConfigMessage(native.evaluationKeyConfig(), parameters: native.encryption)
    }
}

extension Apple_SwiftHomomorphicEncryption_Api_Pir_V1_PIRConfig {
    /// Per-shard parameters as a device reads them (SPEC-PIR §6.3): the repeated config when set, else the
    /// listed shard configs; validated so a hostile config cannot make the client allocate without bound.
    public func shardParameters() throws -> [MulPirParameters] {
        guard algorithm == .mulPir else { throw ProtocolError.invalidField("algorithm must be MUL_PIR") }
        let encryption = try encryptionParameters.native()
        let configs: [ProtoPIRShardConfig]
        if case .repeatedShardConfig(let fixed)? = pirShardConfigs.shardConfigs {
            guard fixed.shardCount >= 1, fixed.shardCount <= UseCaseConfiguration.maxShardCount else {
                throw ProtocolError.invalidField("shard_count \(fixed.shardCount)")
            }
            configs = Array(repeating: fixed.shardConfig, count: Int(fixed.shardCount))
        } else {
            guard !shardConfigs.isEmpty, shardConfigs.count <= UseCaseConfiguration.maxShardCount else {
                throw ProtocolError.invalidField("\(shardConfigs.count) shard configs")
            }
            configs = shardConfigs
        }
        return try configs.map { shard in
            var p = ProtoPirParameters()
            p.encryptionParameters = encryptionParameters
            p.numEntries = shard.numEntries
            p.entrySize = shard.entrySize
            p.dimensions = shard.dimensions
            p.algorithm = .mulPir
            p.batchSize = batchSize
            let native = try p.native()
            guard native.encryption == encryption else { throw ProtocolError.invalidField("encryption parameters") }
            return native
        }
    }

    /// The sharding function of the config.
    public func shardingFunction() throws -> ShardingFunction {
        try keywordPirParams.shardingFunction.native()
    }
}
