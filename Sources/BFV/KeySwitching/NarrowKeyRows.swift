import CKernels

/// A key-switching key's 32-bit rows (`c0` rows then `a` rows of each `K_j`, `wordsPerRow` words each) in one block
/// outside the malloc heap (`cv_key_buffer_alloc`). A server parses a key of about a megabyte on nearly every query
/// at population scale and evicts another; kept in the heap, those blocks fragment it for every query's buffers.
/// Immutable once filled by its initializer's caller.
final class NarrowKeyRows: @unchecked Sendable, Equatable {
    /// Number of rows (`K_j`).
    let count: Int
    /// Words in each row.
    let wordsPerRow: Int
    private let base: UnsafeMutablePointer<UInt32>
    /// Bytes allocated at `base` (at least one word).
    private let allocation: Int
    /// Whether `base` came from `cv_key_buffer_alloc` (else from the Swift allocator, where that failed).
    private let mapped: Bool

    /// Uninitialized rows; `fill` writes each row once, before the value is shared.
    init(count: Int, wordsPerRow: Int, fill: (_ row: Int, _ words: UnsafeMutableBufferPointer<UInt32>) throws -> Void) rethrows {
        self.count = count
        self.wordsPerRow = wordsPerRow
        let words = max(1, count * wordsPerRow)
        allocation = words * MemoryLayout<UInt32>.stride
        if let raw = cv_key_buffer_alloc(allocation) {
            base = raw.bindMemory(to: UInt32.self, capacity: words)
            mapped = true
        } else {
            base = .allocate(capacity: words)
            mapped = false
        }
        for j in 0..<count {
            try fill(j, UnsafeMutableBufferPointer(start: base + j * wordsPerRow, count: wordsPerRow))
        }
    }

    deinit {
        if mapped {
            cv_key_buffer_free(base, allocation)
        } else {
            base.deallocate()
        }
    }

    /// The first word of row `j`.
    func row(_ j: Int) -> UnsafePointer<UInt32> {
        precondition(j >= 0 && j < count, "key row \(j) of \(count)")
        return UnsafePointer(base + j * wordsPerRow)
    }

    /// Row `j` as an array (for rebuilding ciphertexts).
    func words(_ j: Int) -> [UInt32] {
        Array(UnsafeBufferPointer(start: row(j), count: wordsPerRow))
    }

    /// Bytes the rows hold.
    var byteCount: Int { count * wordsPerRow * MemoryLayout<UInt32>.stride }

    static func == (lhs: NarrowKeyRows, rhs: NarrowKeyRows) -> Bool {
        guard lhs.count == rhs.count, lhs.wordsPerRow == rhs.wordsPerRow else { return false }
        let words = lhs.count * lhs.wordsPerRow
        return lhs === rhs
            || UnsafeBufferPointer(start: lhs.base, count: words).elementsEqual(UnsafeBufferPointer(start: rhs.base, count: words))
    }
}
