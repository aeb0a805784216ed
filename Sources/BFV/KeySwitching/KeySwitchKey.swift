/// A key-switching key from a key `s'` to `s` (SPEC-HE §6.2): one seeded evaluation-form ciphertext per
/// ciphertext modulus, each over all L moduli, `K_j` encrypting `p·s'` in RNS row j only.
public struct KeySwitchKey: Sendable, Equatable {
    /// `K_0 … K_{L-2}`.
    public let ciphertexts: [Ciphertext]
    /// 32-bit copies of each `K_j` (`c0` rows then `a` rows) when every modulus has at most 30 bits: the
    /// pre-transformed form the fast key switch reads.
    let narrow: [[UInt32]]?

    public static func == (lhs: KeySwitchKey, rhs: KeySwitchKey) -> Bool { lhs.ciphertexts == rhs.ciphertexts }

    /// Wraps validated ciphertexts.
    public init(ciphertexts: [Ciphertext]) throws {
        guard let first = ciphertexts.first else { throw HEError.malformedSerialization("empty key-switching key") }
        let ctx = first.context
        guard ciphertexts.count == ctx.parameters.ciphertextModuli.count else {
            throw HEError.malformedSerialization("key-switching key has \(ciphertexts.count) ciphertexts, "
                + "expected \(ctx.parameters.ciphertextModuli.count)")
        }
        for ct in ciphertexts {
            guard ct.polys.count == 2, ct.format == .eval, ct.polyContext == ctx.keyContext else {
                throw HEError.malformedSerialization("key-switching ciphertexts are 2 evaluation-form polynomials over all moduli")
            }
        }
        self.ciphertexts = ciphertexts
        if ctx.keyContext.moduli.allSatisfy({ $0.bitWidth <= 30 }) {
            // Residues below 2^30 fit the 32-bit words as they are.
            narrow = ciphertexts.map { ct in ct.polys.flatMap { $0.data.map { UInt32(truncatingIfNeeded: $0) } } }
        } else {
            narrow = nil
        }
    }

    /// Generates a key switching from `target` (evaluation form, key context) to `secretKey`.
    public init<S: ByteSource>(target: PolyRq, secretKey: SecretKey, errorSource: inout S) throws {
        let context = secretKey.context
        guard let ks = context.keySwitching else {
            throw HEError.invalidParameters("parameters with one modulus do not support key switching")
        }
        let keyCtx = context.keyContext
        let n = context.degree
        var cts: [Ciphertext] = []
        for j in 0..<context.parameters.ciphertextModuli.count {
            let seed = SystemByteSource.seed()
            var (c0, a) = try context.encryptZeroForKey(secretKey: secretKey, seed: seed, errorSource: &errorSource)
            let qj = keyCtx.moduli[j]
            let pModQ = qj.reduce(ks.special.value)
            c0.data.withUnsafeMutableBufferPointer { out in
                for i in 0..<n {
                    out[j * n + i] = qj.add(out[j * n + i], qj.multiply(pModQ, target.data[j * n + i]))
                }
            }
            cts.append(try Ciphertext(context: context, polys: [c0, a], correctionFactor: 1, seed: seed))
        }
        try self.init(ciphertexts: cts)
    }

    /// The seeded wire form of each ciphertext.
    public func serialize() -> [SerializedCiphertext] { ciphertexts.map { $0.serialize() } }

    /// Parses seeded (or full) evaluation-form ciphertexts over all moduli.
    public init(deserialize serialized: [SerializedCiphertext], context: Context) throws {
        guard context.parameters.supportsEvaluationKeys else {
            throw HEError.invalidParameters("parameters with one modulus do not support key switching")
        }
        try self.init(ciphertexts: serialized.map {
            try Ciphertext(deserialize: $0, context: context, moduliCount: context.keyContext.rowCount, format: .eval)
        })
    }
}

extension KeySwitchKey {
    /// Bytes this key holds in memory: the 64-bit polynomial coefficients of its ciphertexts and the 32-bit
    /// narrow copies the fused key switch uses. What a cache of parsed keys charges.
    public var memoryBytes: Int {
        let wide = ciphertexts.reduce(0) { total, ct in total + ct.polys.reduce(0) { $0 + $1.data.count * 8 } }
        let narrowBytes = (narrow ?? []).reduce(0) { $0 + $1.count * 4 }
        return wide + narrowBytes
    }
}
