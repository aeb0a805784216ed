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

    /// Builds a context. With `requireNTT`, every modulus must be an NTT-friendly prime.
    public init(degree: Int, moduli: [UInt64], requireNTT: Bool = true) throws {
        guard degree >= 2, UInt64(degree).isPowerOfTwo else {
            throw HEError.invalidParameters("degree \(degree) is not a power of two")
        }
        guard !moduli.isEmpty else { throw HEError.invalidParameters("no moduli") }
        self.degree = degree
        self.log2Degree = degree.trailingZeroBitCount
        self.moduli = try moduli.map { try Modulus($0) }
        self.ntt = try self.moduli.map { q in
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

    /// The context of the first `count` moduli (a new object; callers cache it). It shares this context's NTT tables
    /// for those moduli rather than building its own (192 KiB per modulus at N = 4096).
    public func prefix(_ count: Int) throws -> PolyContext {
        guard count >= 1, count <= moduli.count else {
            throw HEError.invalidParameters("prefix \(count) of \(moduli.count) moduli")
        }
        if count == moduli.count { return self }
        return PolyContext(degree: degree, log2Degree: log2Degree, moduli: Array(moduli.prefix(count)),
                           ntt: Array(ntt.prefix(count)))
    }

    /// A context of NTT-friendly `moduli` that takes `donor`'s NTT tables for every modulus the two have in common
    /// and builds only the others: the auxiliary bases of a context's levels mostly share their primes.
    public convenience init(degree: Int, moduli: [UInt64], sharingTablesOf donor: PolyContext?) throws {
        // The donor's degree was validated when it was built.
        guard let donor, donor.degree == degree, !moduli.isEmpty else {
            try self.init(degree: degree, moduli: moduli)
            return
        }
        let values = donor.moduliValues
        let checked = try moduli.map { try Modulus($0) }
        let tables = try checked.map { q -> NTTTables? in
            if let i = values.firstIndex(of: q.value), let table = donor.ntt[i] { return table }
            return try NTTTables(modulus: q, degree: degree)
        }
        self.init(degree: degree, log2Degree: donor.log2Degree, moduli: checked, ntt: tables)
    }

    private init(degree: Int, log2Degree: Int, moduli: [Modulus], ntt: [NTTTables?]) {
        self.degree = degree
        self.log2Degree = log2Degree
        self.moduli = moduli
        self.ntt = ntt
    }
}
