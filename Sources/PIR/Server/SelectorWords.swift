import BFV
import CKernels

/// A query's expanded selectors as 32-bit words, leaf after leaf in one allocation, where the expansion writes
/// them and the database scan and the second dimension read them in place (no copy into a scan layout).
///
/// Leaf `k` starts at `k · stride` words; `stride` is the leaf's `2 polynomials × RNS rows × N` words plus a
/// 256-byte pad, so the scan's reads of one coefficient block of every row (leaves apart by a power of two
/// without it) spread over the cache sets instead of competing for a few. Each leaf is written by one thread
/// before any reader starts; the first dimension's tasks then read the row selectors and write their columns over
/// them, each task only in its own RNS row and blocks, before the second dimension reads. No two threads touch the
/// same words at once, which is what makes sharing them safe.
final class SelectorWords: @unchecked Sendable {
    /// Leaves.
    let count: Int
    /// Words of one leaf.
    let leafWords: Int
    /// Words from one leaf to the next.
    let stride: Int
    /// The words (unspecified until the leaves are written), on a page boundary.
    let pointer: UnsafeMutablePointer<UInt32>
    /// The mapping `pointer` lies in (`cv_query_buffer_alloc`: outside the malloc heap, on huge pages, and returned
    /// to the kernel once no query holds one), and its length in bytes.
    private let allocation: UnsafeMutableRawPointer
    private let allocationBytes: Int

    /// Padding between leaves, in words.
    static let padWords = 64

    /// Room for `count` leaves of `leafWords` words each; `PIRError.outOfMemory` when the mapping cannot be made.
    init(count: Int, leafWords: Int) throws {
        self.count = count
        self.leafWords = leafWords
        self.stride = leafWords + Self.padWords
        let bytes = count * stride * 4
        var length = 0
        guard let mapping = cv_query_buffer_alloc(bytes, &length) else {
            throw PIRError.outOfMemory("cannot map \(bytes) bytes for a query's selectors")
        }
        allocation = mapping
        allocationBytes = length
        // Page-aligned, so each 128-byte scan block is two whole cache lines.
        pointer = mapping.bindMemory(to: UInt32.self, capacity: count * stride)
    }

    /// The first word of leaf `k`.
    func leaf(_ k: Int) -> UnsafeMutablePointer<UInt32> {
        precondition(k >= 0 && k < count, "selector leaf \(k) of \(count)")
        return pointer + k * stride
    }

    /// Leaf `k`'s words, copied.
    func words(_ k: Int) -> [UInt32] {
        Array(UnsafeBufferPointer(start: leaf(k), count: leafWords))
    }

    deinit {
        cv_query_buffer_free(allocation, allocationBytes)
    }
}

/// One leaf of a `SelectorWords`, read in place by the second dimension's products.
struct SelectorLeaf: CiphertextWords {
    let words: SelectorWords
    let index: Int

    var wordCount: Int { words.leafWords }

    func withWords<R>(_ body: (UnsafeBufferPointer<UInt32>) throws -> R) rethrows -> R {
        try withExtendedLifetime(words) { try body(UnsafeBufferPointer(start: words.leaf(index), count: words.leafWords)) }
    }
}
