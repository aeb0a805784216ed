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
    let words: HugeWords
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
        let height = max(columnHeight, 1)
        let columns = (plaintexts.count + height - 1) / height
        self.slots = plaintexts.count
        self.columnHeight = height
        self.rows = rows
        self.degree = degree
        let width = Self.blockWidth
        let blocks = degree / width
        let words = HugeWords(count: columns * rows * degree * height)
        var present = [UInt8](repeating: 0, count: columns * height)
        do {
            let dst = words.pointer
            for (s, pt) in plaintexts.enumerated() {
                guard let pt else { continue }
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
        }
        self.words = words
        self.present = present
    }

    /// Bytes the matrix occupies.
    var byteCount: Int { words.count * 4 }
}

/// Zeroed 32-bit words in huge-page-backed memory (`cv_huge_alloc`), written once while the matrix is built and
/// only read afterwards, which is what makes sharing them between scan threads safe.
final class HugeWords: @unchecked Sendable {
    /// Word count.
    let count: Int
    /// The words.
    let pointer: UnsafeMutablePointer<UInt32>
    private let raw: UnsafeMutableRawPointer?

    /// Allocates `count` zeroed words (falling back to the Swift allocator if the mapping fails).
    init(count: Int) {
        self.count = count
        if let p = cv_huge_alloc(count * 4) {
            raw = p
            pointer = p.bindMemory(to: UInt32.self, capacity: count)
        } else {
            raw = nil
            pointer = .allocate(capacity: max(count, 1))
            pointer.initialize(repeating: 0, count: count)
        }
    }

    deinit {
        if let raw { cv_huge_free(raw, count * 4) } else { pointer.deallocate() }
    }
}

/// Raw pointers shared by the scan's worker threads. Each thread writes a disjoint coefficient range, so the
/// concurrent use is race-free; the wrapper only carries the pointers across the `@Sendable` boundary.
struct ScanBuffers: @unchecked Sendable {
    let matrix: UnsafePointer<UInt32>
    let present: UnsafePointer<UInt8>
    let selectors: UnsafePointer<UInt32>
    let output: UnsafeMutablePointer<UInt32>
}
