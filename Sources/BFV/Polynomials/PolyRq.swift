/// Whether a polynomial holds coefficients or NTT evaluations. Nothing on the wire says which, so every
/// deserializer is told the format.
public enum PolyFormat: Sendable, Equatable {
    /// Coefficient form.
    case coeff
    /// Evaluation (NTT) form, bit-reversed order.
    case eval
}

/// A polynomial in RNS form: `rows × N` words stored contiguously, row `i` holding residues modulo `moduli[i]`.
public struct PolyRq: Sendable, Equatable {
    /// The ring this polynomial lives in.
    public let context: PolyContext
    /// Coefficient or evaluation form.
    public var format: PolyFormat
    /// Row-major residues; `data[i * N + j]` is coefficient (or slot) `j` modulo `moduli[i]`.
    public var data: [UInt64]

    /// The zero polynomial.
    public init(zeroIn context: PolyContext, format: PolyFormat) {
        self.context = context
        self.format = format
        self.data = [UInt64](repeating: 0, count: context.rowCount * context.degree)
    }

    /// A polynomial from row-major residues; throws if the size or any value is out of range.
    public init(context: PolyContext, format: PolyFormat, data: [UInt64]) throws {
        guard data.count == context.rowCount * context.degree else {
            throw HEError.malformedSerialization("expected \(context.rowCount * context.degree) values, got \(data.count)")
        }
        let n = context.degree
        try data.withUnsafeBufferPointer { d in
            for (r, q) in context.moduli.enumerated() {
                // A branch-free maximum per row (vectorizes); the slow search runs only to name a bad value.
                var largest: UInt64 = 0
                for j in (r * n)..<((r + 1) * n) { largest = Swift.max(largest, d[j]) }
                guard largest >= q.value else { continue }
                for j in 0..<n where d[r * n + j] >= q.value {
                    throw HEError.coefficientOutOfRange(row: r, index: j, value: d[r * n + j], modulus: q.value)
                }
            }
        }
        self.context = context
        self.format = format
        self.data = data
    }

    /// A polynomial from per-row arrays (convenience for tests and vectors).
    public init(context: PolyContext, format: PolyFormat, rows: [[UInt64]]) throws {
        guard rows.count == context.rowCount, rows.allSatisfy({ $0.count == context.degree }) else {
            throw HEError.malformedSerialization("row shape does not match \(context)")
        }
        try self.init(context: context, format: format, data: rows.flatMap { $0 })
    }

    /// Initializer that trusts its input (values already reduced, size right): for the engine's own kernels in
    /// this package, never for bytes from outside.
    @usableFromInline package init(unchecked context: PolyContext, format: PolyFormat, data: [UInt64]) {
        self.context = context
        self.format = format
        self.data = data
    }

    /// Ring degree.
    @inlinable public var degree: Int { context.degree }

    /// Row `i` as an array.
    public func row(_ i: Int) -> [UInt64] {
        Array(data[(i * degree)..<((i + 1) * degree)])
    }

    /// All rows as arrays.
    public var rows: [[UInt64]] { (0..<context.rowCount).map(row) }

    /// Calls `body` with a mutable pointer to row `i`.
    @inlinable
    public mutating func withMutableRow<R>(_ i: Int, _ body: (UnsafeMutableBufferPointer<UInt64>) throws -> R) rethrows -> R {
        let n = degree
        return try data.withUnsafeMutableBufferPointer { buf in
            try body(UnsafeMutableBufferPointer(rebasing: buf[(i * n)..<((i + 1) * n)]))
        }
    }

    /// Converts to evaluation form in place (no-op if already there).
    public mutating func forwardNTT() {
        guard format == .coeff else { return }
        let ctx = context
        for r in 0..<ctx.rowCount {
            guard let tables = ctx.ntt[r] else { preconditionFailure("context built without NTT tables") }
            withMutableRow(r) { tables.forwardInPlace($0) }
        }
        format = .eval
    }

    /// Converts to coefficient form in place (no-op if already there).
    public mutating func inverseNTT() {
        guard format == .eval else { return }
        let ctx = context
        for r in 0..<ctx.rowCount {
            guard let tables = ctx.ntt[r] else { preconditionFailure("context built without NTT tables") }
            withMutableRow(r) { tables.inverseInPlace($0) }
        }
        format = .coeff
    }

    /// This polynomial in the given format.
    public func converted(to target: PolyFormat) -> PolyRq {
        var copy = self
        if target == .eval { copy.forwardNTT() } else { copy.inverseNTT() }
        return copy
    }

    @usableFromInline func checkCompatible(_ other: PolyRq) throws {
        guard context == other.context else {
            throw HEError.incompatibleOperands("polynomials in different contexts")
        }
        guard format == other.format else { throw HEError.incompatibleOperands("polynomials in different formats") }
    }

    /// Applies `op(q, a, b)` element-wise with `other`, row by row, writing into `self`.
    @inline(__always)
    private mutating func combine(_ other: PolyRq, _ op: (Modulus, UInt64, UInt64) -> UInt64) throws {
        try checkCompatible(other)
        let n = degree
        let moduli = context.moduli
        data.withUnsafeMutableBufferPointer { a in
            other.data.withUnsafeBufferPointer { b in
                for (r, q) in moduli.enumerated() {
                    for j in (r * n)..<((r + 1) * n) { a[j] = op(q, a[j], b[j]) }
                }
            }
        }
    }

    /// `self += other` (same context and format).
    public mutating func add(_ other: PolyRq) throws {
        try combine(other) { $0.add($1, $2) }
    }

    /// `self -= other` (same context and format).
    public mutating func subtract(_ other: PolyRq) throws {
        try combine(other) { $0.subtract($1, $2) }
    }

    /// `self = -self`.
    public mutating func negate() {
        let n = degree
        let moduli = context.moduli
        data.withUnsafeMutableBufferPointer { a in
            for (r, q) in moduli.enumerated() {
                for j in (r * n)..<((r + 1) * n) { a[j] = q.negate(a[j]) }
            }
        }
    }

    /// Point-wise product `self *= other`, both in evaluation form over the same context.
    public mutating func multiplyPointwise(_ other: PolyRq) throws {
        guard format == .eval else { throw HEError.incompatibleOperands("point-wise product needs evaluation form") }
        // Residues of moduli up to 32 bits multiply within 64 bits: one Barrett reduction, no 128-bit product.
        try combine(other) { q, a, b in q.bitWidth <= 32 ? q.reduce(a &* b) : q.multiply(a, b) }
    }

    /// Multiplies every row by a per-row scalar (given already reduced per modulus).
    public mutating func multiply(byRowScalars scalars: [UInt64]) {
        let n = degree
        let moduli = context.moduli
        data.withUnsafeMutableBufferPointer { a in
            for (r, q) in moduli.enumerated() {
                let w = scalars[r]
                let ws = q.shoup(w)
                for j in (r * n)..<((r + 1) * n) { a[j] = q.multiplyShoup(a[j], w, ws) }
            }
        }
    }

    /// Multiplies by the monomial `X^power` (negacyclic; `power` taken mod 2N). Coefficient form only.
    public func multiplied(byMonomialPower power: Int) throws -> PolyRq {
        guard format == .coeff else { throw HEError.incompatibleOperands("monomial product needs coefficient form") }
        let n = degree
        let twoN = 2 * n
        let shift = ((power % twoN) + twoN) % twoN
        var out = PolyRq(zeroIn: context, format: .coeff)
        let moduli = context.moduli
        out.data.withUnsafeMutableBufferPointer { o in
            data.withUnsafeBufferPointer { a in
                for (r, q) in moduli.enumerated() {
                    let base = r * n
                    for i in 0..<n {
                        let k = i + shift
                        let v = a[base + i]
                        if k < n {
                            o[base + k] = v
                        } else if k < twoN {
                            o[base + k - n] = q.negate(v)
                        } else {
                            o[base + k - twoN] = v
                        }
                    }
                }
            }
        }
        return out
    }
}
