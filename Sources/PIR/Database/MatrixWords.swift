import CKernels
#if canImport(Glibc)
import Glibc
#endif

/// The 32-bit words of a database matrix: either zeroed anonymous memory (huge-page-backed through
/// `cv_huge_alloc` when the kernel allows), written once while the matrix is built, or a read-only mapping of a
/// scan file, which the kernel pages in and out so a worker can serve more shards than it has memory for. The
/// words are only read after construction, which is what makes sharing them between scan threads safe.
final class MatrixWords: @unchecked Sendable {
    /// Where the words live.
    enum Backing {
        /// Huge-page (or plain anonymous) mapping from `cv_huge_alloc`.
        case huge(UnsafeMutableRawPointer)
        /// The Swift allocator (when the mapping failed).
        case heap
        /// A read-only file mapping of `length` bytes starting at `base`.
        case mapped(base: UnsafeMutableRawPointer, length: Int)
    }

    /// Word count.
    let count: Int
    /// The words (never written through when mapped: the mapping is read-only).
    let pointer: UnsafeMutablePointer<UInt32>
    let backing: Backing

    /// Allocates `count` zeroed words.
    init(count: Int) {
        self.count = count
        if let p = cv_huge_alloc(count * 4) {
            backing = .huge(p)
            pointer = p.bindMemory(to: UInt32.self, capacity: count)
        } else {
            backing = .heap
            pointer = .allocate(capacity: max(count, 1))
            pointer.initialize(repeating: 0, count: count)
        }
    }

    /// Maps `length` bytes (at least `count` words) of the open file `descriptor` read-only, starting at the
    /// page-aligned `offset`.
    init(mapping descriptor: Int32, offset: Int, length: Int, count: Int) throws {
        precondition(offset % 4096 == 0 && length >= count * 4 && length > 0, "mapped matrices start on a page boundary")
        guard let base = mmap(nil, length, PROT_READ, MAP_SHARED, descriptor, off_t(offset)), base != MAP_FAILED else {
            throw PIRError.malformedDatabase("cannot map the scan file: errno \(errno)")
        }
        // The scan reads each column front to back.
        _ = madvise(base, length, MADV_SEQUENTIAL)
        self.count = count
        backing = .mapped(base: base, length: length)
        pointer = base.bindMemory(to: UInt32.self, capacity: count)
    }

    /// Whether the words are a file mapping rather than memory of this process.
    var isMapped: Bool {
        if case .mapped = backing { return true }
        return false
    }

    /// The same words copied into anonymous memory.
    func copiedToMemory() -> MatrixWords {
        let copy = MatrixWords(count: count)
        copy.pointer.update(from: pointer, count: count)
        return copy
    }

    deinit {
        switch backing {
        case .huge(let raw): cv_huge_free(raw, count * 4)
        case .heap: pointer.deallocate()
        case .mapped(let base, let length): munmap(base, length)
        }
    }
}
