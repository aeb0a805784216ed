/// A BFV ciphertext: two or more polynomials over the same moduli and format, a correction factor (always 1 in
/// PIR) and, while it is fresh, the seed its second polynomial expands from.
public struct Ciphertext: Sendable {
    /// The BFV context.
    public let context: Context
    /// The polynomials `c0, c1 (, c2)`; decryption is `c0 + c1·s (+ c2·s²)`.
    public var polys: [PolyRq]
    /// The plaintext is scaled by this factor; must be invertible mod t.
    public var correctionFactor: UInt64
    /// The seed of `c1` while the ciphertext is fresh; cleared by any homomorphic operation.
    public var seed: [UInt8]?

    /// Wraps polynomials; they must share a context and a format.
    public init(context: Context, polys: [PolyRq], correctionFactor: UInt64 = 1, seed: [UInt8]? = nil) throws {
        guard polys.count >= 2 else { throw HEError.incompatibleOperands("a ciphertext needs at least 2 polynomials") }
        guard polys.allSatisfy({ $0.context == polys[0].context && $0.format == polys[0].format }) else {
            throw HEError.incompatibleOperands("ciphertext polynomials differ in context or format")
        }
        guard polys[0].context.isPrefix(of: context.keyContext) else {
            throw HEError.incompatibleOperands("ciphertext moduli are not a prefix of the parameters' moduli")
        }
        self.context = context
        self.polys = polys
        self.correctionFactor = correctionFactor
        self.seed = seed
    }

    /// The zero ciphertext (all polynomials zero) over `moduliCount` moduli.
    public static func zero(context: Context, moduliCount: Int? = nil, format: PolyFormat, polyCount: Int = 2) throws -> Ciphertext {
        let ctx = try context.context(moduliCount: moduliCount ?? context.ciphertextContext.rowCount)
        return try Ciphertext(context: context, polys: Array(repeating: PolyRq(zeroIn: ctx, format: format), count: polyCount))
    }

    /// The ring the polynomials live in.
    public var polyContext: PolyContext { polys[0].context }
    /// Number of moduli.
    public var moduliCount: Int { polyContext.rowCount }
    /// Coefficient or evaluation form.
    public var format: PolyFormat { polys[0].format }

    /// Converts every polynomial to evaluation form (keeps the seed, as the reference does).
    public mutating func convertToEval() {
        for i in polys.indices { polys[i].forwardNTT() }
    }

    /// Converts every polynomial to coefficient form (keeps the seed, as the reference does).
    public mutating func convertToCoeff() {
        for i in polys.indices { polys[i].inverseNTT() }
    }

    /// This ciphertext in the given format.
    public func converted(to target: PolyFormat) -> Ciphertext {
        var copy = self
        if target == .eval { copy.convertToEval() } else { copy.convertToCoeff() }
        return copy
    }
}

extension Ciphertext: Equatable {
    public static func == (lhs: Ciphertext, rhs: Ciphertext) -> Bool {
        lhs.polys == rhs.polys && lhs.correctionFactor == rhs.correctionFactor
    }
}
