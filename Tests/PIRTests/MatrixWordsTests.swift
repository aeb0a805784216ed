#if canImport(Glibc)
import Glibc
#endif
@testable import PIR
import Testing

/// A database matrix in memory costs its words, not whole huge pages: the mapping starts on a huge-page boundary
/// (so every whole 2 MiB can be one huge page) and ends at the small page after its last word.
@Suite("Matrix words in memory")
struct MatrixWordsTests {
    @Test("a matrix one small page longer than a huge page maps no memory past that page, and starts on a huge-page boundary")
    func noWholeHugePageTail() throws {
        let huge = 2 << 20, page = 4096
        let words = MatrixWords(count: (huge + page) / 4)
        guard case .huge(let raw) = words.backing else { return }  // no anonymous mapping here: nothing to check
        #expect(Int(bitPattern: raw) % huge == 0)
        // Written once, as a matrix is built: every page faults in, the last one included.
        for i in stride(from: 0, to: words.count, by: page / 4) { words.pointer[i] = UInt32(truncatingIfNeeded: i) | 1 }
        #expect(words.pointer[words.count - 1] == 0)
        // The small page after the last word is not this matrix's: outside any mapping (ENOMEM), or at least not
        // resident. A mapping rounded up to whole huge pages has it resident, in the huge page behind the last word.
        var resident: UInt8 = 0
        let result = mincore(raw + huge + page, page, &resident)
        #expect(result == -1 ? errno == ENOMEM : resident & 1 == 0,
                "mincore past the matrix: result \(result), resident \(resident)")
    }
}
