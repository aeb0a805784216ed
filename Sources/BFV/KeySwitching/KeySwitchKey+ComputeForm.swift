import CKernels

extension KeySwitchKey {
    /// Parses seeded evaluation-form ciphertexts straight into the compute form (`computeForm()`): each row is
    /// unpacked, and each seed expanded, into the 32-bit words the key switch reads (one block outside the malloc
    /// heap, `NarrowKeyRows`), with no 64-bit copy made and dropped. The same checks and the same words as
    /// `init(deserialize:context:)` followed by `computeForm()`; unseeded ciphertexts, or moduli over 30 bits, take
    /// that path.
    public init(deserializeComputeForm serialized: [SerializedCiphertext], context: Context) throws {
        guard context.parameters.supportsEvaluationKeys else {
            throw HEError.invalidParameters("parameters with one modulus do not support key switching")
        }
        let keyContext = context.keyContext
        let seeded = serialized.compactMap { ct -> (poly0: [UInt8], seed: [UInt8])? in
            if case let .seeded(poly0, seed) = ct { return (poly0, seed) }
            return nil
        }
        guard seeded.count == serialized.count, keyContext.moduli.allSatisfy({ $0.bitWidth <= 30 }) else {
            self = try KeySwitchKey(deserialize: serialized, context: context).computeForm()
            return
        }
        try Self.checkCount(serialized.count, context: context)
        let n = context.degree
        let half = keyContext.rowCount * n
        for (poly0, seed) in seeded { try Ciphertext.checkSeeded(poly0: poly0, seed: seed, context: keyContext) }
        let rows = try NarrowKeyRows(count: seeded.count, wordsPerRow: 2 * half) { j, words in
            let (poly0, seed) = seeded[j]
            var stream = try SeededByteStream(seed: seed)
            try poly0.withUnsafeBytes { raw in
                var offset = 0
                for (r, q) in keyContext.moduli.enumerated() {
                    let count = CoefficientPacking.rowByteCount(count: n, bits: q.bitWidth, skip: 0)
                    let row = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + count)])
                    let unpacked = cv_unpack32(row.baseAddress!.assumingMemoryBound(to: UInt8.self), count, n,
                                               UInt32(q.bitWidth), UInt32(q.value), words.baseAddress! + r * n)
                    if unpacked < n {
                        // A value not below its modulus: the engine's unpack throws the error that names it.
                        try withUnsafeTemporaryAllocation(of: UInt64.self, capacity: n) { wide in
                            try CoefficientPacking.unpack(row, count: n, bits: q.bitWidth, into: wide, modulus: q.value, row: r)
                            for i in 0..<n { words[r * n + i] = UInt32(truncatingIfNeeded: wide[i]) }
                        }
                    }
                    offset += count
                }
            }
            Sampling.uniformWords(context: keyContext, source: &stream,
                                  into: UnsafeMutableBufferPointer(rebasing: words[half..<(2 * half)]))
        }
        self.init(narrowRows: rows, context: context)
    }
}
