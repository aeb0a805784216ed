/// A ciphertext's wire form below protobuf (SPEC-HE §8.3): the byte blobs `SerializedCiphertext` carries.
public enum SerializedCiphertext: Sendable, Equatable {
    /// `c0` packed without a count header (no skipped bits) and the 32-byte seed `c1` expands from.
    case seeded(poly0: [UInt8], seed: [UInt8])
    /// A u16 little-endian polynomial count then each polynomial packed with its skipped low bits.
    case full(polys: [UInt8], skipLSBs: [UInt32], correctionFactor: UInt64)
}

/// Most polynomials a full ciphertext may carry (a product before relinearization has 3).
let maxPolysPerCiphertext = 3

extension Ciphertext {
    /// Serializes as the reference does: seeded while a seed is present (2 polynomials), else full with one
    /// skip count per polynomial. With `forDecryption`, a single-modulus ciphertext drops the low bits the
    /// client's decryption does not need (the PIR response format, SPEC-HE §8.4).
    public func serialize(forDecryption: Bool = false) -> SerializedCiphertext {
        if let seed, polys.count == 2, !forDecryption {
            return .seeded(poly0: CoefficientPacking.serialize(polys[0]), seed: seed)
        }
        var skips = [Int](repeating: 0, count: polys.count)
        if forDecryption, moduliCount == 1 {
            let s = context.skipLSBsForDecryption
            for i in skips.indices { skips[i] = i == 0 ? s[0] : s[1] }
        }
        var blob: [UInt8] = [UInt8(truncatingIfNeeded: polys.count), UInt8(truncatingIfNeeded: polys.count >> 8)]
        for (poly, skip) in zip(polys, skips) {
            blob.append(contentsOf: CoefficientPacking.serialize(poly, skip: skip))
        }
        return .full(polys: blob, skipLSBs: skips.map { UInt32($0) }, correctionFactor: correctionFactor)
    }

    /// The lengths a seeded ciphertext over `context` must have: a 32-byte seed and a whole packed `poly0`.
    static func checkSeeded(poly0: [UInt8], seed: [UInt8], context: PolyContext) throws {
        guard seed.count == NistCtrDrbg.seedCount else { throw HEError.invalidSeedLength(seed.count) }
        let expected = CoefficientPacking.polyByteCount(context: context)
        guard poly0.count == expected else {
            throw HEError.malformedSerialization("seeded poly0 has \(poly0.count) bytes, expected \(expected)")
        }
    }

    /// Parses a serialized ciphertext over the first `moduliCount` moduli, in the given format (the wire does not
    /// say which). Validates every length, count, skip and value; never traps on malformed input.
    public init(deserialize serialized: SerializedCiphertext, context: Context, moduliCount: Int,
                format: PolyFormat) throws {
        let ctx = try context.context(moduliCount: moduliCount)
        switch serialized {
        case let .seeded(poly0, seed):
            try Self.checkSeeded(poly0: poly0, seed: seed, context: ctx)
            let (c0, _) = try poly0.withUnsafeBytes {
                try CoefficientPacking.deserialize($0, context: ctx, format: format)
            }
            var c1 = try Sampling.uniform(context: ctx, seed: seed)
            if format == .coeff { c1.inverseNTT() }
            try self.init(context: context, polys: [c0, c1], correctionFactor: 1, seed: seed)
        case let .full(blob, skipLSBs, correctionFactor):
            guard blob.count >= 2 else { throw HEError.malformedSerialization("full ciphertext shorter than its count") }
            let count = Int(blob[0]) | Int(blob[1]) << 8
            guard count >= 2, count <= maxPolysPerCiphertext else {
                throw HEError.malformedSerialization("full ciphertext with \(count) polynomials")
            }
            guard skipLSBs.isEmpty || skipLSBs.count == count else {
                throw HEError.malformedSerialization("\(skipLSBs.count) skip counts for \(count) polynomials")
            }
            let minBits = ctx.moduli.map(\.bitWidth).min() ?? 0
            for s in skipLSBs where s >= minBits {
                throw HEError.malformedSerialization("skip of \(s) bits is not below the modulus width \(minBits)")
            }
            let t = context.plaintextModulus.value
            guard correctionFactor >= 1, correctionFactor < t, (try? context.plaintextModulus.inverse(correctionFactor)) != nil else {
                throw HEError.malformedSerialization("correction factor \(correctionFactor) is not invertible mod \(t)")
            }
            var polys: [PolyRq] = []
            var offset = 2
            try blob.withUnsafeBytes { raw in
                for i in 0..<count {
                    let skip = skipLSBs.isEmpty ? 0 : Int(skipLSBs[i])
                    let (poly, used) = try CoefficientPacking.deserialize(
                        UnsafeRawBufferPointer(rebasing: raw[offset...]), context: ctx, format: format, skip: skip)
                    polys.append(poly)
                    offset += used
                }
            }
            guard offset == blob.count else {
                throw HEError.malformedSerialization("full ciphertext has \(blob.count - offset) trailing bytes")
            }
            try self.init(context: context, polys: polys, correctionFactor: correctionFactor, seed: nil)
        }
    }
}
