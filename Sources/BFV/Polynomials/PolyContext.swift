/// The ring `Z_Q[X]/(X^N+1)` in RNS form: a degree and an ordered list of moduli, with each modulus's NTT tables.
///
/// Contexts are immutable and shared by reference, so polynomials can cheaply say which ring they live in.
public final class PolyContext: Sendable, Equatable, CustomStringConvertible {
    /// Ring degree N.
    public let degree: Int
    /// `log2 N`.
    public let log2Degree: Int
    /// The RNS moduli, in order.
    public let moduli: [Modulus]
    /// NTT tables per modulus, or nil for a modulus that is not NTT-friendly (e.g. a plaintext modulus).
    public let ntt: [NTTTables?]

    /// Builds a context. With `requireNTT`, every modulus must be an NTT-friendly prime. The NTT tables of any
    /// modulus `donor` also has are `donor`'s, not built again (192 KiB per modulus at N = 4096): a context's levels
    /// and their auxiliary bases mostly share their moduli.
    public init(degree: Int, moduli: [UInt64], requireNTT: Bool = true,
                sharingTablesOf donor: PolyContext? = nil) throws {
        guard degree >= 2, UInt64(degree).isPowerOfTwo else {
            throw HEError.invalidParameters("degree \(degree) is not a power of two")
        }
        guard !moduli.isEmpty else { throw HEError.invalidParameters("no moduli") }
        self.degree = degree
        self.log2Degree = degree.trailingZeroBitCount
        self.moduli = try moduli.map { try Modulus($0) }
        let donated = donor?.degree == degree ? donor : nil
        self.ntt = try self.moduli.map { q in
            if let donated, let i = donated.moduli.firstIndex(of: q), let table = donated.ntt[i] { return table }
            if requireNTT { return try NTTTables(modulus: q, degree: degree) }
            return try? NTTTables(modulus: q, degree: degree)
        }
    }

    /// Number of RNS rows.
    @inlinable public var rowCount: Int { moduli.count }

    /// The moduli as plain integers.
    public var moduliValues: [UInt64] { moduli.map(\.value) }

    public static func == (lhs: PolyContext, rhs: PolyContext) -> Bool {
        lhs === rhs || (lhs.degree == rhs.degree && lhs.moduli == rhs.moduli)
    }

    public var description: String { "PolyContext(N=\(degree), moduli=\(moduliValues))" }

    /// Whether `other` has this context's moduli as a prefix of its own (same degree).
    public func isPrefix(of other: PolyContext) -> Bool {
        degree == other.degree && moduli.count <= other.moduli.count
            && Array(other.moduli.prefix(moduli.count)) == moduli
    }

    /// The context of the first `count` moduli (a new object; callers cache it), with this context's NTT tables.
    public func prefix(_ count: Int) throws -> PolyContext {
        guard count >= 1, count <= moduli.count else {
            throw HEError.invalidParameters("prefix \(count) of \(moduli.count) moduli")
        }
        if count == moduli.count { return self }
        return try PolyContext(degree: degree, moduli: Array(moduliValues.prefix(count)), requireNTT: false,
                               sharingTablesOf: self)
    }
}
