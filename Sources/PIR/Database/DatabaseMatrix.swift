import BFV
import CKernels

/// One sub-table's plaintexts as a contiguous 32-bit matrix in the order the first-dimension scan reads it.
///
/// Slots are grouped by column (`d0` consecutive slots); within a column the words run
/// `[RNS row][32-coefficient block][slot in column][32 coefficients]`, so one kernel call streams one contiguous
/// `d0 × 128`-byte block and no two rows it reads alias in the caches. Used when every ciphertext modulus is
/// below 2^31 (a product of two residues fits 62 bits) and the degree is a multiple of 32.
struct DatabaseMatrix: Sendable {
    /// Coefficients per scan block.
    static let blockWidth = 32
    /// Plaintext slots (`chunkCount · d0 · d1`), before padding to whole columns.
    let slots: Int
    /// Slots per column (`d0`).
    let columnHeight: Int
    /// RNS rows per plaintext.
    let rows: Int
    /// Ring degree.
    let degree: Int
    /// The words, column by column; absent slots are zero and skipped.
    let words: MatrixWords
    /// Whether each slot holds a nonzero plaintext (1) or not (0), padded to whole columns.
    let present: [UInt8]

    /// Whether the narrow layout can hold residues of these moduli at this degree.
    static func supports(_ moduli: [Modulus], degree: Int) -> Bool {
        moduli.allSatisfy { $0.bitWidth <= 30 } && degree % blockWidth == 0
    }

    /// Words of one column.
    var columnStride: Int { rows * degree * columnHeight }

    /// Offset of the block `(column, RNS row r, block b)`: `columnHeight × 32` words.
    func blockOffset(column: Int, row r: Int, block b: Int) -> Int {
        column * columnStride + (r * (degree / Self.blockWidth) + b) * columnHeight * Self.blockWidth
    }

    /// Packs evaluation-form plaintexts (nil = absent) into the matrix, `columnHeight` slots per column.
    init(plaintexts: [EvalPlaintext?], rows: Int, degree: Int, columnHeight: Int) {
        self.init(slots: plaintexts.count, rows: rows, degree: degree, columnHeight: columnHeight) { plaintexts[$0] }
    }

    /// Packs `slots` evaluation-form plaintexts, made one at a time by `plaintext(slot)` (nil = absent), into the
    /// matrix as they come: a shard's load then holds the matrix and one plaintext, not every plaintext beside it.
    init(slots: Int, rows: Int, degree: Int, columnHeight: Int, plaintext: (Int) throws -> EvalPlaintext?) rethrows {
        let height = max(columnHeight, 1)
        let columns = (slots + height - 1) / height
        self.slots = slots
        self.columnHeight = height
        self.rows = rows
        self.degree = degree
        let width = Self.blockWidth
        let blocks = degree / width
        let words = MatrixWords(count: columns * rows * degree * height)
        var present = [UInt8](repeating: 0, count: columns * height)
        let dst = words.pointer
        for s in 0..<slots {
            guard let pt = try plaintext(s) else { continue }
            present[s] = 1
            let (column, slot) = s.quotientAndRemainder(dividingBy: height)
            pt.poly.data.withUnsafeBufferPointer { src in
                for r in 0..<rows {
                    for b in 0..<blocks {
                        let base = column * rows * degree * height + ((r * blocks + b) * height + slot) * width
                        let from = r * degree + b * width
                        for k in 0..<width { dst[base + k] = UInt32(truncatingIfNeeded: src[from + k]) }
                    }
                }
            }
        }
        self.words = words
        self.present = present
    }

    /// A matrix whose words already exist (read from a scan file); `present` must cover whole columns.
    init(words: MatrixWords, present: [UInt8], slots: Int, rows: Int, degree: Int, columnHeight: Int) {
        self.words = words
        self.present = present
        self.slots = slots
        self.rows = rows
        self.degree = degree
        self.columnHeight = columnHeight
    }

    /// Words a matrix of `slots` slots takes (whole columns).
    static func wordCount(slots: Int, rows: Int, degree: Int, columnHeight: Int) -> Int {
        let height = max(columnHeight, 1)
        return (slots + height - 1) / height * rows * degree * height
    }

    /// Bytes the matrix occupies.
    var byteCount: Int { words.count * 4 }
}

/// Raw pointers shared by the scan's worker threads. Each thread writes a disjoint coefficient range, so the
/// concurrent use is race-free; the wrapper only carries the pointers across the `@Sendable` boundary.
struct ScanBuffers: @unchecked Sendable {
    let matrix: UnsafePointer<UInt32>
    let present: UnsafePointer<UInt8>
    let selectors: ScanSelectors
    /// The columns buffer; nil when the columns go over the row selectors.
    let output: UnsafeMutablePointer<UInt32>?
}
