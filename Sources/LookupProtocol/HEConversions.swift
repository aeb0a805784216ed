import BFV
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwiftProtobuf

/// Short names for the generated HE messages.
public typealias ProtoSerializedCiphertext = Apple_SwiftHomomorphicEncryption_V1_SerializedCiphertext
public typealias ProtoEvaluationKey = Apple_SwiftHomomorphicEncryption_V1_SerializedEvaluationKey
public typealias ProtoEncryptionParameters = Apple_SwiftHomomorphicEncryption_V1_EncryptionParameters
public typealias ProtoEvaluationKeyConfig = Apple_SwiftHomomorphicEncryption_V1_EvaluationKeyConfig
public typealias ProtoSecretKey = Apple_SwiftHomomorphicEncryption_V1_SerializedSecretKey

extension Apple_SwiftHomomorphicEncryption_V1_SerializedCiphertext {
    /// The message for a serialized ciphertext.
    public init(_ native: SerializedCiphertext) {
        self.init()
        switch native {
        case let .seeded(poly0, seed):
            seeded = .with {
                $0.poly0 = Data(poly0)
                $0.seed = Data(seed)
            }
        case let .full(polys, skips, correction):
            full = .with {
                $0.polys = Data(polys)
                $0.skipLsbs = skips
                $0.correctionFactor = correction
            }
        }
    }

    /// The serialized ciphertext this message carries; throws when no case is set.
    public func native() throws -> SerializedCiphertext {
        switch serializedCiphertextType {
        case .seeded(let s)?: return .seeded(poly0: [UInt8](s.poly0), seed: [UInt8](s.seed))
        case .full(let f)?: return .full(polys: [UInt8](f.polys), skipLSBs: f.skipLsbs, correctionFactor: f.correctionFactor)
        case nil: throw ProtocolError.missingField("SerializedCiphertext.serialized_ciphertext_type")
        }
    }
}

extension Apple_SwiftHomomorphicEncryption_V1_SerializedKeySwitchKey {
    /// The message for one key-switching key.
    public init(_ native: [SerializedCiphertext]) {
        self.init()
        keySwitchKey = .with { $0.ciphertexts = native.map(ProtoSerializedCiphertext.init) }
    }

    /// The ciphertexts of this key.
    public func native() throws -> [SerializedCiphertext] {
        try keySwitchKey.ciphertexts.map { try $0.native() }
    }
}

extension Apple_SwiftHomomorphicEncryption_V1_SerializedEvaluationKey {
    /// The message for an evaluation key. The relinearization key is always written (empty when absent), as
    /// the reference reads both sub-messages.
    public init(_ native: SerializedEvaluationKey) {
        self.init()
        galoisKey = .with {
            for (element, key) in native.galoisKeys {
                $0.keySwitchKeys[element] = .init(key)
            }
        }
        relinKey = .with { $0.relinKey = .init(native.relinearizationKey ?? []) }
    }

    /// The evaluation key's wire form, Galois keys in ascending element order. An absent or empty
    /// relinearization key both mean none.
    public func native() throws -> SerializedEvaluationKey {
        let galois = try galoisKey.keySwitchKeys.sorted { $0.key < $1.key }.map { (element: $0.key, key: try $0.value.native()) }
        let relin = try relinKey.relinKey.native()
        return SerializedEvaluationKey(galoisKeys: galois, relinearizationKey: relin.isEmpty ? nil : relin)
    }

    /// The evaluation key this message holds, checked against `context`: the one way a message becomes a key.
    public func evaluationKey(context: Context) throws -> EvaluationKey {
        try EvaluationKey(deserialize: try native(), context: context)
    }

    /// The evaluation key in a serialized `SerializedEvaluationKey` message (as stored and as sent to workers).
    public static func evaluationKey(serialized: [UInt8], context: Context) throws -> EvaluationKey {
        try Self(serializedBytes: serialized).evaluationKey(context: context)
    }

    /// The key this message holds in the compute form a server caches (`EvaluationKey.computeForm()`), parsed
    /// straight into it and checked as `evaluationKey(context:)` checks.
    public func computeFormKey(context: Context) throws -> EvaluationKey {
        try EvaluationKey(deserializeComputeForm: try native(), context: context)
    }

    /// `computeFormKey(context:)` of a serialized message.
    public static func computeFormKey(serialized: [UInt8], context: Context) throws -> EvaluationKey {
        try Self(serializedBytes: serialized).computeFormKey(context: context)
    }
}

extension Apple_SwiftHomomorphicEncryption_V1_EncryptionParameters {
    /// The message for encryption parameters (zero values are left out on the wire, as proto3 requires).
    public init(_ native: EncryptionParameters) {
        self.init()
        polynomialDegree = UInt64(native.polyDegree)
        plaintextModulus = native.plaintextModulus
        coefficientModuli = native.coefficientModuli
        errorStdDev = .stddev32
        securityLevel = native.securityLevel == .quantum128 ? .quantum128 : .unspecified
        heScheme = .bfv
    }

    /// Validated parameters; throws for anything the engine does not support (BGV, σ = 6.4, bad moduli).
    public func native() throws -> EncryptionParameters {
        guard heScheme == .bfv else { throw ProtocolError.invalidField("he_scheme must be BFV") }
        guard errorStdDev == .stddev32 else { throw ProtocolError.invalidField("error_std_dev must be STDDEV32") }
        let level: SecurityLevel
        switch securityLevel {
        case .unspecified: level = .unchecked
        case .quantum128: level = .quantum128
        case .UNRECOGNIZED(let v): throw ProtocolError.invalidField("security_level \(v)")
        }
        guard polynomialDegree <= 1 << 17 else { throw ProtocolError.invalidField("polynomial_degree \(polynomialDegree)") }
        return try EncryptionParameters(polyDegree: Int(polynomialDegree), plaintextModulus: plaintextModulus,
                                        coefficientModuli: coefficientModuli, securityLevel: level)
    }
}

extension Apple_SwiftHomomorphicEncryption_V1_EvaluationKeyConfig {
    /// The message for an evaluation-key config, elements in the config's order.
    public init(_ config: EvaluationKeyConfig, parameters: EncryptionParameters) {
        self.init()
        encryptionParameters = .init(parameters)
        galoisElements = config.galoisElements.map { UInt32($0) }
        hasRelinKey_p = config.hasRelinearizationKey
    }

    /// The config this message carries.
    public func native() -> EvaluationKeyConfig {
        EvaluationKeyConfig(galoisElements: galoisElements.map { Int($0) }, hasRelinearizationKey: hasRelinKey_p)
    }
}

extension Message {
    /// Serialized bytes with map entries in key order, so equal messages give equal bytes (and hashes).
    public func deterministicBytes() throws -> [UInt8] {
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        return try serializedBytes(options: options)
    }
}
