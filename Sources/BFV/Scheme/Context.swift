/// A BFV instance: the parameters with every context and constant the operations need, built once and shared.
///
/// Contexts by moduli count: `keyContext` has all L moduli (keys live there), the ciphertext context has the
/// first L−1 (the special modulus dropped), and modulus switching walks down the prefixes to `[q_0]`.
public final class Context: Sendable {
    /// The parameters this context was built from.
    public let parameters: EncryptionParameters
    /// Ring degree N.
    public let degree: Int
    /// The plaintext modulus t.
    public let plaintextModulus: Modulus
    /// The ring of coefficient plaintexts (one row mod t, with NTT tables only when t allows SIMD).
    public let plaintextContext: PolyContext
    /// All L moduli.
    public let keyContext: PolyContext
    /// Prefix contexts; `prefixContexts[k-1]` has the first k moduli.
    let prefixContexts: [PolyContext]
    /// Per-level constants for each ciphertext moduli count (index k-1 for k moduli).
    let levels: [LevelConstants]
    /// Key-switching constants (the special modulus p is the last key modulus).
    let keySwitching: KeySwitchingConstants?
    /// The fused 32-bit Galois key switch, when every key modulus has at most 30 bits.
    public let narrowKeySwitch: NarrowKeySwitch?

    /// Builds a context from validated parameters.
    public init(parameters: EncryptionParameters) throws {
        self.parameters = parameters
        self.degree = parameters.polyDegree
        let t = try Modulus(parameters.plaintextModulus)
        self.plaintextModulus = t
        self.plaintextContext = try PolyContext(degree: degree, moduli: [parameters.plaintextModulus], requireNTT: false)
        let key = try PolyContext(degree: degree, moduli: parameters.coefficientModuli)
        self.keyContext = key
        var prefixes: [PolyContext] = []
        for k in 1...key.rowCount {
            prefixes.append(try key.prefix(k))
        }
        self.prefixContexts = prefixes
        let ctCount = parameters.ciphertextModuli.count
        var levels: [LevelConstants] = []
        for k in 1...ctCount {
            levels.append(try LevelConstants(context: prefixes[k - 1], plaintextModulus: t,
                                             previous: levels.last?.multiplication.auxContext))
        }
        self.levels = levels
        let ks = parameters.supportsEvaluationKeys ? try KeySwitchingConstants(keyContext: key) : nil
        self.keySwitching = ks
        self.narrowKeySwitch = NarrowKeySwitch(keyContext: key, ciphertextRows: ctCount, constants: ks)
    }

    /// Builds a context for a preset.
    public convenience init(preset: ParameterPreset) throws {
        try self.init(parameters: EncryptionParameters(preset))
    }

    /// The context fresh ciphertexts and queries use: L−1 moduli (all of them if there is only one).
    public var ciphertextContext: PolyContext { prefixContexts[parameters.ciphertextModuli.count - 1] }

    /// The context of the first `count` moduli.
    public func context(moduliCount count: Int) throws -> PolyContext {
        guard count >= 1, count <= prefixContexts.count else {
            throw HEError.incompatibleOperands("no context with \(count) moduli (have \(prefixContexts.count))")
        }
        return prefixContexts[count - 1]
    }

    /// Constants for ciphertexts over `count` moduli.
    func level(_ count: Int) throws -> LevelConstants {
        guard count >= 1, count <= levels.count else {
            throw HEError.incompatibleOperands("ciphertext with \(count) moduli; this context allows 1…\(levels.count)")
        }
        return levels[count - 1]
    }

    /// The response-compression skip counts for a single-modulus ciphertext (SPEC-HE §8.4).
    public var skipLSBsForDecryption: [Int] {
        let q0 = parameters.coefficientModuli[0]
        let t = parameters.plaintextModulus
        let lPrime = q0 >= 2 * t ? (63 - (q0 / t).leadingZeroBitCount) - 3 : 0
        // Int(8 * sqrt(2N/9)), computed with doubles exactly as the reference does.
        let tmp = Int(8.0 * (2.0 * Double(degree) / 9.0).squareRoot())
        var skip0 = max(lPrime, 0)
        var skip1 = lPrime - (tmp > 1 ? (64 - UInt64(tmp - 1).leadingZeroBitCount) : 0)
        if skip1 <= 1 {
            skip0 = max(lPrime + 1, 0)
            skip1 = 0
        }
        return [skip0, skip1]
    }
}

/// Constants for ciphertexts over a prefix `q_0 … q_{k-1}`: plaintext scaling, decryption, modulus switching
/// down to `k-1` moduli and the auxiliary base of ciphertext multiplication.
struct LevelConstants: Sendable {
    let context: PolyContext
    /// `floor(Q/t) mod q_i`.
    let deltaFloor: [UInt64]
    /// `[Q]_t`.
    let qModT: UInt64
    /// `(Q/q_i)^{-1} mod q_i`.
    let puncturedInverse: [UInt64]
    /// For dropping the last modulus `q_last`: `q_last^{-1} mod q_i` and `floor(q_last/2) mod q_i` for i < k-1.
    let lastInverse: [UInt64]
    let lastHalf: [UInt64]
    /// Auxiliary base for ciphertext × ciphertext (HPS-style exact scaling).
    let multiplication: MultiplicationConstants

    /// The constants of `context`'s level; `previous` is the level below's auxiliary base, whose NTT tables this
    /// level's shares where their primes agree.
    init(context: PolyContext, plaintextModulus t: Modulus, previous: PolyContext? = nil) throws {
        self.context = context
        let moduli = context.moduli
        var qt: UInt64 = 1 % t.value
        for q in moduli { qt = t.multiply(qt, t.reduce(q.value)) }
        qModT = qt
        deltaFloor = try moduli.map { q in
            q.multiply(q.negate(q.reduce(qt)), try q.inverse(q.reduce(t.value)))
        }
        puncturedInverse = try moduli.enumerated().map { i, qi in
            var prod: UInt64 = 1
            for (k, qk) in moduli.enumerated() where k != i { prod = qi.multiply(prod, qi.reduce(qk.value)) }
            return try qi.inverse(prod)
        }
        let last = moduli[moduli.count - 1]
        lastInverse = try moduli.dropLast().map { try $0.inverse($0.reduce(last.value)) }
        lastHalf = moduli.dropLast().map { $0.reduce(last.value / 2) }
        multiplication = try MultiplicationConstants(context: context, plaintextModulus: t, previous: previous)
    }

    /// `Δ(m) mod q_i = floor(Q/t)·m + floor(([Q]_t·m + (t+1)/2) / t)` for a plaintext value `m < t`.
    @inline(__always)
    func scaledPlaintext(_ m: UInt64, row i: Int, t: Modulus) -> UInt64 {
        let q = context.moduli[i]
        let correction = (UInt128(qModT) * UInt128(m) + UInt128((t.value + 1) / 2)) / UInt128(t.value)
        return q.add(q.multiply(deltaFloor[i], q.reduce(m)), q.reduce(correction))
    }
}

/// Constants for the special-modulus key switching: `p^{-1} mod q_i` and `floor(p/2) mod q_i`.
struct KeySwitchingConstants: Sendable {
    let special: Modulus
    let specialInverse: [UInt64]
    let specialHalf: [UInt64]

    init(keyContext: PolyContext) throws {
        let p = keyContext.moduli[keyContext.rowCount - 1]
        special = p
        let qs = keyContext.moduli.dropLast()
        specialInverse = try qs.map { try $0.inverse($0.reduce(p.value)) }
        specialHalf = qs.map { $0.reduce(p.value / 2) }
    }
}
