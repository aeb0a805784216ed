import BFV

/// One sub-table's plaintexts as a contiguous 32-bit matrix (slot, RNS row, coefficient), the layout the
/// first-dimension scan streams through. Used when every ciphertext modulus is below 2^31, so a product of two
/// residues fits 62 bits and up to `2^(64 − 2·bits) − 2` products accumulate in a 64-bit word before a reduction.
struct DatabaseMatrix: Sendable {
    /// Plaintext slots (`chunkCount · d0 · d1`).
    let slots: Int
    /// RNS rows per plaintext.
    let rows: Int
    /// Ring degree.
    let degree: Int
    /// `words[(slot · rows + r) · degree + c]`; absent slots are zero and skipped.
    let words: [UInt32]
    /// Whether each slot holds a nonzero plaintext.
    let present: [Bool]

    /// Whether the narrow layout can hold residues of these moduli.
    static func supports(_ moduli: [Modulus]) -> Bool { moduli.allSatisfy { $0.bitWidth <= 30 } }

    /// Packs evaluation-form plaintexts (nil = absent) into the matrix.
    init(plaintexts: [EvalPlaintext?], rows: Int, degree: Int) {
        self.slots = plaintexts.count
        self.rows = rows
        self.degree = degree
        let stride = rows * degree
        var words = [UInt32](repeating: 0, count: plaintexts.count * stride)
        var present = [Bool](repeating: false, count: plaintexts.count)
        words.withUnsafeMutableBufferPointer { dst in
            for (s, pt) in plaintexts.enumerated() {
                guard let pt else { continue }
                present[s] = true
                pt.poly.data.withUnsafeBufferPointer { src in
                    for i in 0..<stride { dst[s * stride + i] = UInt32(truncatingIfNeeded: src[i]) }
                }
            }
        }
        self.words = words
        self.present = present
    }

    /// Bytes the matrix occupies.
    var byteCount: Int { words.count * 4 }
}

/// Raw pointers shared by the scan's worker threads. Each thread writes a disjoint coefficient range, so the
/// concurrent use is race-free; the wrapper only carries the pointers across the `@Sendable` boundary.
struct ScanBuffers: @unchecked Sendable {
    let matrix: UnsafePointer<UInt32>
    let selectors: UnsafePointer<UInt32>
    let output: UnsafeMutablePointer<UInt64>
}
