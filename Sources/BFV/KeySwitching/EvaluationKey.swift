/// Which evaluation keys a client must generate: the Galois elements and whether a relinearization key is needed.
public struct EvaluationKeyConfig: Sendable, Hashable {
    /// Galois elements in the order the config was built with. The reference serializes them in that order
    /// (its vectors hold `[N+1, N/2+1, 3]`), so configs meant for hashing should be built sorted.
    public let galoisElements: [Int]
    /// Whether a relinearization key is included.
    public let hasRelinearizationKey: Bool

    /// Creates a config; duplicates are dropped, the first occurrence keeping its place.
    public init(galoisElements: [Int], hasRelinearizationKey: Bool) {
        var seen = Set<Int>()
        self.galoisElements = galoisElements.filter { seen.insert($0).inserted }
        self.hasRelinearizationKey = hasRelinearizationKey
    }
}

/// The keys a client uploads so the server can compute on its ciphertexts: Galois keys by element and an
/// optional relinearization key.
public struct EvaluationKey: Sendable, Equatable {
    /// Key-switching keys from `σ_g(s)` to `s`, by Galois element g.
    public let galoisKeys: [Int: KeySwitchKey]
    /// Key-switching key from `s²` to `s`.
    public let relinearizationKey: KeySwitchKey?

    /// Wraps keys.
    public init(galoisKeys: [Int: KeySwitchKey], relinearizationKey: KeySwitchKey?) {
        self.galoisKeys = galoisKeys
        self.relinearizationKey = relinearizationKey
    }

    /// The key as a server keeps it to compute with (`KeySwitchKey.computeForm()`: the 32-bit rows only).
    public func computeForm() -> EvaluationKey {
        EvaluationKey(galoisKeys: galoisKeys.mapValues { $0.computeForm() }, relinearizationKey: relinearizationKey?.computeForm())
    }

    /// The config this key satisfies.
    public var config: EvaluationKeyConfig {
        EvaluationKeyConfig(galoisElements: galoisKeys.keys.sorted(), hasRelinearizationKey: relinearizationKey != nil)
    }

    /// Generates the keys `config` asks for.
    public init<S: ByteSource>(config: EvaluationKeyConfig, secretKey: SecretKey, errorSource: inout S) throws {
        let context = secretKey.context
        var galois: [Int: KeySwitchKey] = [:]
        for g in config.galoisElements {
            guard Galois.isValidElement(g, degree: context.degree) else { throw HEError.invalidGaloisElement(g) }
            let target = try Galois.apply(secretKey.poly, element: g)
            galois[g] = try KeySwitchKey(target: target, secretKey: secretKey, errorSource: &errorSource)
        }
        var relin: KeySwitchKey?
        if config.hasRelinearizationKey {
            var square = secretKey.poly
            try square.multiplyPointwise(secretKey.poly)
            relin = try KeySwitchKey(target: square, secretKey: secretKey, errorSource: &errorSource)
        }
        self.init(galoisKeys: galois, relinearizationKey: relin)
    }

    /// Generates the keys with error from the system's secure RNG.
    public init(config: EvaluationKeyConfig, secretKey: SecretKey) throws {
        var source = SystemByteSource()
        try self.init(config: config, secretKey: secretKey, errorSource: &source)
    }

    /// The wire form below protobuf, Galois keys in ascending element order.
    public func serialize() -> SerializedEvaluationKey {
        SerializedEvaluationKey(
            galoisKeys: galoisKeys.sorted { $0.key < $1.key }.map { (UInt64($0.key), $0.value.serialize()) },
            relinearizationKey: relinearizationKey?.serialize())
    }

    /// Parses and validates every key (elements, counts, lengths, seeds and values).
    public init(deserialize serialized: SerializedEvaluationKey, context: Context) throws {
        try self.init(serialized, context: context) { try KeySwitchKey(deserialize: $0, context: $1) }
    }

    /// Parses and validates every key as `init(deserialize:context:)` does, straight into the compute form
    /// (`KeySwitchKey.init(deserializeComputeForm:context:)`): what a server caches.
    public init(deserializeComputeForm serialized: SerializedEvaluationKey, context: Context) throws {
        try self.init(serialized, context: context) { try KeySwitchKey(deserializeComputeForm: $0, context: $1) }
    }

    private init(_ serialized: SerializedEvaluationKey, context: Context,
                 parse: ([SerializedCiphertext], Context) throws -> KeySwitchKey) throws {
        var galois: [Int: KeySwitchKey] = [:]
        for (element, cts) in serialized.galoisKeys {
            guard element < UInt64(2 * context.degree), Galois.isValidElement(Int(element), degree: context.degree) else {
                throw HEError.invalidGaloisElement(Int(truncatingIfNeeded: element))
            }
            galois[Int(element)] = try parse(cts, context)
        }
        var relin: KeySwitchKey?
        if let r = serialized.relinearizationKey, !r.isEmpty {
            relin = try parse(r, context)
        }
        self.init(galoisKeys: galois, relinearizationKey: relin)
    }
}

/// An evaluation key's wire form below protobuf: `(element, ciphertexts)` pairs and the relinearization
/// ciphertexts. An absent or empty relinearization key both mean "none", as in the reference.
public struct SerializedEvaluationKey: Sendable, Equatable {
    /// Galois keys, in the order they were read or will be written.
    public var galoisKeys: [(element: UInt64, key: [SerializedCiphertext])]
    /// Relinearization key ciphertexts, if any.
    public var relinearizationKey: [SerializedCiphertext]?

    /// Creates the wire form.
    public init(galoisKeys: [(element: UInt64, key: [SerializedCiphertext])], relinearizationKey: [SerializedCiphertext]?) {
        self.galoisKeys = galoisKeys
        self.relinearizationKey = relinearizationKey
    }

    public static func == (lhs: SerializedEvaluationKey, rhs: SerializedEvaluationKey) -> Bool {
        lhs.galoisKeys.count == rhs.galoisKeys.count
            && zip(lhs.galoisKeys, rhs.galoisKeys).allSatisfy { $0.element == $1.element && $0.key == $1.key }
            && lhs.relinearizationKey == rhs.relinearizationKey
    }
}

extension EvaluationKey {
    /// Bytes the parsed key holds in memory (every key-switching key's coefficients and narrow copies), about
    /// nine times its serialized size: what the parsed-key cache charges for it.
    public var memoryBytes: Int {
        galoisKeys.values.reduce(0) { $0 + $1.memoryBytes } + (relinearizationKey?.memoryBytes ?? 0)
    }
}
