/// A BFV plaintext in coefficient form: N values modulo t.
public struct Plaintext: Sendable, Equatable {
    /// One row modulo t, coefficient form.
    public var poly: PolyRq

    /// Wraps a polynomial over the plaintext context.
    public init(poly: PolyRq) { self.poly = poly }

    /// The N coefficients.
    public var values: [UInt64] { poly.data }
}

/// A plaintext prepared as a multiplier: values lifted centred into the ciphertext moduli and NTT-transformed,
/// the form of the server's processed database.
public struct EvalPlaintext: Sendable, Equatable {
    /// Evaluation-form polynomial over some ciphertext moduli.
    public var poly: PolyRq

    /// Wraps an evaluation-form polynomial.
    public init(poly: PolyRq) throws {
        guard poly.format == .eval else { throw HEError.incompatibleOperands("EvalPlaintext needs evaluation form") }
        self.poly = poly
    }
}

extension Context {
    /// Coefficient encoding: value i becomes coefficient i, zero-padded to N.
    public func encodeCoefficients(_ values: [UInt64]) throws -> Plaintext {
        guard values.count <= degree else {
            throw HEError.incompatibleOperands("\(values.count) values do not fit \(degree) coefficients")
        }
        let t = plaintextModulus.value
        for v in values where v >= t { throw HEError.plaintextValueOutOfRange(value: v, modulus: t) }
        var poly = PolyRq(zeroIn: plaintextContext, format: .coeff)
        poly.data.replaceSubrange(0..<values.count, with: values)
        return Plaintext(poly: poly)
    }

    /// Coefficient encoding of signed values in `[-floor(t/2), floor((t-1)/2)]`.
    public func encodeSignedCoefficients(_ values: [Int64]) throws -> Plaintext {
        let t = plaintextModulus.value
        let lower = -Int64(t / 2)
        let upper = Int64((t - 1) / 2)
        for v in values where v < lower || v > upper {
            throw HEError.plaintextValueOutOfRange(value: UInt64(bitPattern: v), modulus: t)
        }
        return try encodeCoefficients(values.map { plaintextModulus.residue($0) })
    }

    /// The signed values of a coefficient plaintext, centred.
    public func decodeSignedCoefficients(_ plaintext: Plaintext) -> [Int64] {
        let t = plaintextModulus.value
        return plaintext.values.map { $0 > (t - 1) / 2 ? Int64($0) - Int64(t) : Int64($0) }
    }

    /// Whether SIMD encoding is available (t prime and `≡ 1 mod 2N`).
    public var supportsSimdEncoding: Bool { plaintextContext.ntt[0] != nil }

    /// The Eval-form index of each SIMD slot: slot i (i < N/2) at `br((3^i − 1)/2)`, slot `N/2 + i` at
    /// `br((2N − 1 − 3^i)/2)`.
    func simdSlotIndices() -> [Int] {
        let n = degree
        let twoN = 2 * n
        var indices = [Int](repeating: 0, count: n)
        var g = 1
        for i in 0..<(n / 2) {
            indices[i] = bitReverse((g - 1) / 2, bits: plaintextContext.log2Degree)
            indices[n / 2 + i] = bitReverse((twoN - 1 - g) / 2, bits: plaintextContext.log2Degree)
            g = g * 3 % twoN
        }
        return indices
    }

    /// SIMD (batched) encoding: N slot values, slot-wise products under homomorphic multiplication.
    public func encodeSimd(_ values: [UInt64]) throws -> Plaintext {
        guard supportsSimdEncoding, let tables = plaintextContext.ntt[0] else {
            throw HEError.invalidParameters("plaintext modulus \(plaintextModulus.value) does not support SIMD encoding")
        }
        guard values.count <= degree else {
            throw HEError.incompatibleOperands("\(values.count) values do not fit \(degree) slots")
        }
        let t = plaintextModulus.value
        for v in values where v >= t { throw HEError.plaintextValueOutOfRange(value: v, modulus: t) }
        var poly = PolyRq(zeroIn: plaintextContext, format: .eval)
        for (slot, index) in simdSlotIndices().enumerated() where slot < values.count {
            poly.data[index] = values[slot]
        }
        poly.withMutableRow(0) { tables.inverseInPlace($0) }
        poly.format = .coeff
        return Plaintext(poly: poly)
    }

    /// The N slot values of a SIMD-encoded plaintext.
    public func decodeSimd(_ plaintext: Plaintext) throws -> [UInt64] {
        guard supportsSimdEncoding, let tables = plaintextContext.ntt[0] else {
            throw HEError.invalidParameters("plaintext modulus \(plaintextModulus.value) does not support SIMD encoding")
        }
        var poly = plaintext.poly
        poly.withMutableRow(0) { tables.forwardInPlace($0) }
        return simdSlotIndices().map { poly.data[$0] }
    }

    /// Lifts a plaintext centred into the first `moduliCount` moduli and converts it to evaluation form, ready to
    /// multiply ciphertexts (SPEC-HE §10.1).
    public func evalPlaintext(_ plaintext: Plaintext, moduliCount: Int? = nil) throws -> EvalPlaintext {
        let ctx = try context(moduliCount: moduliCount ?? ciphertextContext.rowCount)
        let t = plaintextModulus.value
        let half = (t + 1) / 2
        var poly = PolyRq(zeroIn: ctx, format: .coeff)
        let n = degree
        poly.data.withUnsafeMutableBufferPointer { out in
            for (r, q) in ctx.moduli.enumerated() {
                let tMod = q.reduce(t)
                for j in 0..<n {
                    let m = plaintext.poly.data[j]
                    out[r * n + j] = m < half ? q.reduce(m) : q.subtract(q.reduce(m), tMod)
                }
            }
        }
        poly.forwardNTT()
        return try EvalPlaintext(poly: poly)
    }

    /// The plaintext an evaluation plaintext was made from (inverse of `evalPlaintext`): inverse NTT, then the
    /// centred lift undone from the first modulus. Used to ship processed shards in their compact form.
    public func plaintext(fromEval eval: EvalPlaintext) throws -> Plaintext {
        let poly = eval.poly.converted(to: .coeff)
        let q = poly.context.moduli[0].value
        let t = plaintextModulus.value
        let half = (t + 1) / 2
        var values = [UInt64](repeating: 0, count: degree)
        for j in 0..<degree {
            let c = poly.data[j]
            if c < half {
                values[j] = c
            } else {
                guard c > q - half else { throw HEError.malformedSerialization("evaluation plaintext is not a lifted plaintext") }
                values[j] = t - (q - c)
            }
        }
        return try encodeCoefficients(values)
    }
}

extension Plaintext {
    /// The reference's `SerializedPlaintext.poly` bytes: the packed row mod t, no count header.
    public func serialize() -> [UInt8] { CoefficientPacking.serialize(poly) }

    /// Parses the packed row of a coefficient plaintext; values must be below t.
    public init(deserialize bytes: [UInt8], context: Context) throws {
        let expected = CoefficientPacking.polyByteCount(context: context.plaintextContext)
        guard bytes.count == expected else {
            throw HEError.malformedSerialization("plaintext has \(bytes.count) bytes, expected \(expected)")
        }
        let (poly, _) = try bytes.withUnsafeBytes {
            try CoefficientPacking.deserialize($0, context: context.plaintextContext, format: .coeff)
        }
        self.init(poly: poly)
    }
}

extension EvalPlaintext {
    /// Packed evaluation rows over the plaintext's moduli (the server's own storage; never on the wire to a client).
    public func serialize() -> [UInt8] { CoefficientPacking.serialize(poly) }

    /// Parses packed evaluation rows over the first `moduliCount` moduli.
    public init(deserialize bytes: [UInt8], context: Context, moduliCount: Int) throws {
        let ctx = try context.context(moduliCount: moduliCount)
        let expected = CoefficientPacking.polyByteCount(context: ctx)
        guard bytes.count == expected else {
            throw HEError.malformedSerialization("plaintext has \(bytes.count) bytes, expected \(expected)")
        }
        let (poly, _) = try bytes.withUnsafeBytes { try CoefficientPacking.deserialize($0, context: ctx, format: .eval) }
        try self.init(poly: poly)
    }
}
