/// The auxiliary RNS base and converters for ciphertext × ciphertext at one level.
///
/// The tensor product (or a sum X of up to `maxAccumulatedProducts` of them) is computed exactly modulo each
/// prime of `Q ∪ P`, then scaled: Y = (t·X − [t·X]_Q)/Q, the rounding of t·X/Q, is formed in base P (HPS-style)
/// and brought back to Q by a centred conversion. That conversion is exact when |Y| < P/2 and its floating-point
/// overflow count rounds the right way, which holds with room to spare when |Y| ≤ P/2^`marginBits`. Since
/// |X| ≤ 2·count·N·(Q/2)² for centred operands (the middle polynomial sums two products per pair),
/// |Y| ≤ count·N·t·Q/2 + 1/2, and P is the fewest 30-bit primes whose product exceeds that bound times
/// 2^`marginBits` for the largest allowed count. (X itself need not fit in
/// Q·P: only its residues are used.) This rounding differs from the reference's BEHZ in the last place at most,
/// which the protocol permits (SPEC-HE §10.5): only decryption results are compared.
struct MultiplicationConstants: Sendable {
    /// Most tensor products one scaling may sum (the bound P is sized for).
    static let maxAccumulatedProducts = 1 << 12
    /// The auxiliary primes P (30-bit, NTT-friendly: their transforms take the 32-bit kernels and the base
    /// conversions sum in 64 bits).
    let auxContext: PolyContext
    let qToP: BaseConverter
    let pToQ: BaseConverter
    /// `t mod q_i` and `t mod p_j`.
    let tModQ: [UInt64]
    let tModP: [UInt64]
    /// `Q^{-1} mod p_j`.
    let qInverseModP: [UInt64]
    /// The 32-bit extension kernel, when Q and P allow it.
    let narrowTensor: NarrowTensor?

    /// Bits by which P exceeds the largest |Y| (see the type's comment): the centred conversion's overflow count,
    /// a rounded sum of lp doubles, is then exact with a margin of about 2^−6 against an error near 2^−50.
    static let marginBits = 6.0

    /// The constants for `context`; the auxiliary base takes the NTT tables of `previous` (another level's
    /// auxiliary base) for the primes they share.
    init(context: PolyContext, plaintextModulus t: Modulus, previous: PolyContext? = nil) throws {
        let qBits = context.moduli.reduce(0.0) { $0 + log2Approx($1.value) }
        // log2 of count·N·t·Q/2 for the largest count, plus the margin.
        let needed = log2Approx(UInt64(Self.maxAccumulatedProducts)) + Double(context.log2Degree)
            + log2Approx(t.value) + qBits - 1 + Self.marginBits
        let candidates = Primes.nttPrimes(count: Int((needed / 29).rounded(.up)), bitWidth: 30, degree: context.degree,
                                          avoiding: Set(context.moduliValues))
        var primes: [UInt64] = []
        var bits = 0.0
        for p in candidates where bits < needed {
            primes.append(p)
            bits += log2Approx(p)
        }
        guard bits >= needed else {
            throw HEError.invalidParameters("not enough auxiliary primes for degree \(context.degree)")
        }
        auxContext = try PolyContext(degree: context.degree, moduli: primes, sharingTablesOf: previous)
        qToP = try BaseConverter(from: context.moduli, to: auxContext.moduli)
        pToQ = try BaseConverter(from: auxContext.moduli, to: context.moduli)
        tModQ = context.moduli.map { $0.reduce(t.value) }
        tModP = auxContext.moduli.map { $0.reduce(t.value) }
        qInverseModP = try auxContext.moduli.map { p in
            try p.inverse(context.moduli.reduce(UInt64(1)) { p.multiply($0, p.reduce($1.value)) })
        }
        narrowTensor = NarrowTensor(q: context, p: auxContext, converter: qToP)
    }
}
