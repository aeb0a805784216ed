import BFV
import PIR
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Short names for the generated PIR messages.
public typealias ProtoPirParameters = Apple_SwiftHomomorphicEncryption_Pir_V1_PirParameters
public typealias ProtoEncryptedIndices = Apple_SwiftHomomorphicEncryption_Pir_V1_EncryptedIndices
public typealias ProtoPIRRequest = Apple_SwiftHomomorphicEncryption_Api_Pir_V1_PIRRequest
public typealias ProtoPIRResponse = Apple_SwiftHomomorphicEncryption_Api_Pir_V1_PIRResponse
public typealias ProtoPIRShardConfig = Apple_SwiftHomomorphicEncryption_Api_Pir_V1_PIRShardConfig
public typealias ProtoKeywordDatabase = Apple_SwiftHomomorphicEncryption_Pir_V1_KeywordDatabase

extension Apple_SwiftHomomorphicEncryption_Pir_V1_PIRShardingFunction {
    /// The sharding function; an unset oneof means sha256, as in the reference.
    public func native() throws -> ShardingFunction {
        switch function {
        case .sha256?, nil: return .sha256
        case .doubleMod(let d)?:
            guard d.otherShardCount > 0 else { throw ProtocolError.invalidField("double_mod.other_shard_count must be positive") }
            return .doubleMod(otherShardCount: Int(d.otherShardCount))
        }
    }

    /// The message for a sharding function.
    public init(_ native: ShardingFunction) {
        self.init()
        switch native {
        case .sha256: function = .sha256(.init())
        case .doubleMod(let other): function = .doubleMod(.with { $0.otherShardCount = UInt32(other) })
        }
    }
}

extension Apple_SwiftHomomorphicEncryption_Pir_V1_PirParameters {
    /// The shard's MulPIR parameters; throws for anything but MulPIR with 1 or 2 dimensions.
    public func native() throws -> MulPirParameters {
        guard algorithm == .mulPir else { throw ProtocolError.invalidField("algorithm must be MUL_PIR") }
        guard numEntries >= 1, numEntries <= 1 << 32, entrySize >= 1, entrySize <= 1 << 24, batchSize <= 64 else {
            throw ProtocolError.invalidField("num_entries \(numEntries), entry_size \(entrySize), batch_size \(batchSize)")
        }
        guard dimensions.allSatisfy({ $0 >= 1 && $0 <= 1 << 20 }) else { throw ProtocolError.invalidField("dimensions") }
        return try MulPirParameters(encryption: try encryptionParameters.native(), entryCount: Int(numEntries),
                                    entrySize: Int(entrySize), dimensions: dimensions.map { Int($0) },
                                    batchSize: Int(batchSize))
    }

    /// The sharding function recorded in the keyword-PIR parameters.
    public func shardingFunction() throws -> ShardingFunction {
        try keywordPirParams.shardingFunction.native()
    }
}

extension Apple_SwiftHomomorphicEncryption_Pir_V1_EncryptedIndices {
    /// The query ciphertexts (seeded or full, coefficient form over the ciphertext moduli), validated.
    public func native(context: Context) throws -> [Ciphertext] {
        guard !ciphertexts.isEmpty, ciphertexts.count <= 64 else {
            throw ProtocolError.invalidField("\(ciphertexts.count) query ciphertexts")
        }
        return try ciphertexts.map {
            try Ciphertext(deserialize: try $0.native(), context: context,
                           moduliCount: context.ciphertextContext.rowCount, format: .coeff)
        }
    }

    /// The message for query ciphertexts.
    public init(_ query: [Ciphertext], pirCalls: Int) {
        self.init()
        ciphertexts = query.map { ProtoSerializedCiphertext($0.serialize()) }
        numPirCalls = UInt64(pirCalls)
    }
}

extension Apple_SwiftHomomorphicEncryption_Api_Pir_V1_PIRResponse {
    /// The response message: one reply per PIR call, each ciphertext serialized for decryption.
    public init(replies: [[Ciphertext]]) {
        self.init()
        self.replies = replies.map { reply in
            .with { $0.ciphertexts = reply.map { ProtoSerializedCiphertext($0.serialize(forDecryption: true)) } }
        }
    }

    /// The reply ciphertexts, parsed with one modulus as the device does.
    public func native(context: Context) throws -> [[Ciphertext]] {
        try replies.map { reply in
            try reply.ciphertexts.map {
                try Ciphertext(deserialize: try $0.native(), context: context, moduliCount: 1, format: .coeff)
            }
        }
    }
}

extension Apple_SwiftHomomorphicEncryption_Pir_V1_PirParameters {
    /// The per-shard parameters file as the reference's processing tool writes it.
    public init(_ parameters: MulPirParameters, sharding: ShardingFunction, keyConfig: EvaluationKeyConfigMessage) {
        self.init()
        encryptionParameters = .init(parameters.encryption)
        numEntries = UInt64(parameters.entryCount)
        entrySize = UInt64(parameters.entrySize)
        dimensions = parameters.dimensions.map { UInt64($0) }
        keywordPirParams = .with {
            $0.numHashFunctions = UInt64(parameters.batchSize)
            $0.shardingFunction = .init(sharding)
        }
        algorithm = .mulPir
        batchSize = UInt64(parameters.batchSize)
        evaluationKeyConfig = keyConfig
    }
}

/// The generated `EvaluationKeyConfig` message.
public typealias EvaluationKeyConfigMessage = Apple_SwiftHomomorphicEncryption_V1_EvaluationKeyConfig
