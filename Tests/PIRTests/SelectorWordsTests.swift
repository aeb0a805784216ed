import CKernels
@testable import PIR
import Testing

/// A query's selector mapping that the host cannot give is a typed error, not a crash, and leaves the pool as it was.
@Suite("Selector words")
struct SelectorWordsTests {
    @Test("Selectors larger than the address space throw outOfMemory and keep nothing")
    func unmappable() throws {
        let leafWords = 2 * 2 * 4096
        // 2^48 bytes: beyond the 47-bit user address space mmap hands out, whatever the overcommit policy.
        let count = (1 << 48) / ((leafWords + SelectorWords.padWords) * 4)
        let kept = cv_query_buffer_pooled_bytes()
        #expect {
            _ = try SelectorWords(count: count, leafWords: leafWords)
        } throws: { error in
            (error as? PIRError)?.code == .outOfMemory
        }
        #expect(cv_query_buffer_pooled_bytes() == kept)
        let words = try SelectorWords(count: 4, leafWords: leafWords)  // the pool still serves
        #expect(words.count == 4)
    }
}
