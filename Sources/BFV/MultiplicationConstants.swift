/// The auxiliary RNS base and converters for ciphertext × ciphertext at one level.
///
/// The tensor product (or a sum of up to `maxAccumulatedProducts` of them) is computed exactly over `Q ∪ P`,
/// then scaled by `t/Q` with rounding in base P (HPS-style) and brought back to Q. P is chosen so that
/// `|t·X/Q| < P/2^25` even for the largest allowed sum, which makes every base conversion on the way exact. This rounding differs from the reference's BEHZ in the last place at most,
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

    init(context: PolyContext, plaintextModulus t: Modulus) throws {
        let qBits = context.moduli.reduce(0.0) { $0 + log2Approx($1.value) }
        let needed = 2 + log2Approx(t.value) + Double(context.log2Degree) + qBits + 25
            + log2Approx(UInt64(Self.maxAccumulatedProducts))
        let count = Int((needed / 29).rounded(.up))
        let primes = Primes.nttPrimes(count: count, bitWidth: 30, degree: context.degree,
                                      avoiding: Set(context.moduliValues))
        guard primes.count == count else {
            throw HEError.invalidParameters("not enough auxiliary primes for degree \(context.degree)")
        }
        auxContext = try PolyContext(degree: context.degree, moduli: primes)
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
