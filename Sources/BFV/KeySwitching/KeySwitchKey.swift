/// A key-switching key from a key `s'` to `s` (SPEC-HE §6.2): one seeded evaluation-form ciphertext per
/// ciphertext modulus, each over all L moduli, `K_j` encrypting `p·s'` in RNS row j only.
public struct KeySwitchKey: Sendable, Equatable {
    /// `K_0 … K_{L-2}` (rebuilt from the 32-bit rows for a key in compute form).
    public var ciphertexts: [Ciphertext] { wide.isEmpty ? rebuiltFromNarrow() : wide }
    /// The 64-bit ciphertexts; empty in compute form.
    private let wide: [Ciphertext]
    /// 32-bit copies of each `K_j` (`c0` rows then `a` rows) when every modulus has at most 30 bits: the
    /// pre-transformed form the fast key switch reads.
    let narrow: NarrowKeyRows?
    /// The number of `K_j` (one per ciphertext modulus).
    public let count: Int
    private let context: Context

    public static func == (lhs: KeySwitchKey, rhs: KeySwitchKey) -> Bool {
        if !lhs.wide.isEmpty, !rhs.wide.isEmpty { return lhs.wide == rhs.wide }
        return lhs.count == rhs.count && lhs.narrow != nil && lhs.narrow == rhs.narrow
    }

    /// Wraps validated ciphertexts.
    public init(ciphertexts: [Ciphertext]) throws {
        guard let first = ciphertexts.first else { throw HEError.malformedSerialization("empty key-switching key") }
        let ctx = first.context
        try Self.checkCount(ciphertexts.count, context: ctx)
        for ct in ciphertexts {
            guard ct.polys.count == 2, ct.format == .eval, ct.polyContext == ctx.keyContext else {
                throw HEError.malformedSerialization("key-switching ciphertexts are 2 evaluation-form polynomials over all moduli")
            }
        }
        wide = ciphertexts
        count = ciphertexts.count
        context = ctx
        if ctx.keyContext.moduli.allSatisfy({ $0.bitWidth <= 30 }) {
            // Residues below 2^30 fit the 32-bit words as they are.
            let wordsPerRow = ciphertexts[0].polys.reduce(0) { $0 + $1.data.count }
            narrow = NarrowKeyRows(count: ciphertexts.count, wordsPerRow: wordsPerRow) { j, words in
                var i = 0
                for poly in ciphertexts[j].polys {
                    for value in poly.data { words[i] = UInt32(truncatingIfNeeded: value); i += 1 }
                }
            }
        } else {
            narrow = nil
        }
    }

    /// A key-switching key has one ciphertext per ciphertext modulus.
    static func checkCount(_ count: Int, context: Context) throws {
        guard count > 0 else { throw HEError.malformedSerialization("empty key-switching key") }
        guard count == context.parameters.ciphertextModuli.count else {
            throw HEError.malformedSerialization("key-switching key has \(count) ciphertexts, "
                + "expected \(context.parameters.ciphertextModuli.count)")
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
    /// Bytes this key holds in memory: the 64-bit polynomial coefficients of its ciphertexts (none in compute form)
    /// and the 32-bit narrow copies the fused key switch uses. What a cache of parsed keys charges.
    public var memoryBytes: Int {
        let wideBytes = wide.reduce(0) { total, ct in total + ct.polys.reduce(0) { $0 + $1.data.count * 8 } }
        let narrowBytes = narrow?.byteCount ?? 0
        return wideBytes + narrowBytes
    }

    /// The key as a server keeps it to compute with: only the 32-bit rows the key switch reads, a third of the
    /// parsed size, when every modulus fits them; unchanged otherwise. `ciphertexts` and `serialize()` still work
    /// (rebuilt from the rows, without the seeds).
    public func computeForm() -> KeySwitchKey {
        guard narrow != nil, !wide.isEmpty else { return self }
        return KeySwitchKey(narrowOnly: self)
    }

    private init(narrowOnly key: KeySwitchKey) {
        wide = []
        narrow = key.narrow
        count = key.count
        context = key.context
    }

    /// A compute-form key from its 32-bit rows (`c0` rows then `a` rows per ciphertext, checked by the caller).
    init(narrowRows: NarrowKeyRows, context: Context) {
        wide = []
        narrow = narrowRows
        count = narrowRows.count
        self.context = context
    }

    /// The ciphertexts of a compute-form key from its 32-bit rows (evaluation form over the key moduli; the seeds
    /// are gone, so they serialize in full).
    private func rebuiltFromNarrow() -> [Ciphertext] {
        guard let narrow else { return [] }
        let keyContext = context.keyContext
        let half = keyContext.rowCount * context.degree
        return (0..<narrow.count).compactMap { j in
            let rows = narrow.words(j)
            let polys = [rows[0..<half], rows[half..<(2 * half)]].map {
                PolyRq(unchecked: keyContext, format: .eval, data: $0.map { UInt64($0) })
            }
            return try? Ciphertext(context: context, polys: polys)
        }
    }
}
