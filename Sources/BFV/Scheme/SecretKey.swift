/// A BFV secret key: a uniform ternary polynomial over all L moduli, kept in evaluation form. Client-side only;
/// a server never sees one (tests use the reference's to decrypt).
public struct SecretKey: Sendable {
    /// The BFV context.
    public let context: Context
    /// `s` in evaluation form over the key context.
    public let poly: PolyRq

    /// Samples a fresh key from `source` (the system RNG by default).
    public init<S: ByteSource>(context: Context, source: inout S) {
        self.context = context
        let values = Sampling.ternary(count: context.degree, source: &source)
        self.poly = Sampling.liftSigned(values, context: context.keyContext).converted(to: .eval)
    }

    /// Samples a fresh key with the system's secure RNG.
    public init(context: Context) {
        var source = SystemByteSource()
        self.init(context: context, source: &source)
    }

    /// Wraps an evaluation-form polynomial over the key context.
    public init(context: Context, poly: PolyRq) throws {
        guard poly.context == context.keyContext, poly.format == .eval else {
            throw HEError.incompatibleOperands("a secret key is an evaluation-form polynomial over all moduli")
        }
        self.context = context
        self.poly = poly
    }

    /// The reference's byte form: u16 count (1) then the packed evaluation rows for all L moduli.
    public func serialize() -> [UInt8] {
        [1, 0] + CoefficientPacking.serialize(poly)
    }

    /// Parses the reference's byte form.
    public init(deserialize bytes: [UInt8], context: Context) throws {
        guard bytes.count >= 2, bytes[0] == 1, bytes[1] == 0 else {
            throw HEError.malformedSerialization("secret key must hold exactly one polynomial")
        }
        let (poly, used) = try bytes.withUnsafeBytes { raw in
            try CoefficientPacking.deserialize(UnsafeRawBufferPointer(rebasing: raw[2...]),
                                               context: context.keyContext, format: .eval)
        }
        guard used == bytes.count - 2 else { throw HEError.malformedSerialization("trailing bytes after secret key") }
        try self.init(context: context, poly: poly)
    }

    /// `s` restricted to the first `count` moduli (evaluation form).
    func restricted(to ctx: PolyContext) -> PolyRq {
        let n = context.degree
        return PolyRq(unchecked: ctx, format: .eval, data: Array(poly.data[0..<(ctx.rowCount * n)]))
    }
}
