import CKernels
import Foundation
@testable import PIR
import Testing

/// A query's selector mapping that the host cannot give is a typed error, not a crash, and leaves the pool as it was;
/// one it gives is on huge pages where the kernel offers them.
@Suite("Selector words")
struct SelectorWordsTests {
    /// In a child process of its own (an exit test): other suites' queries keep and release mappings in this one.
    @Test("Selectors larger than the address space throw outOfMemory and keep nothing")
    func unmappable() async {
        await #expect(processExitsWith: .success) {
            let leafWords = 2 * 2 * 4096
            // 2^48 bytes: beyond the 47-bit user address space mmap hands out, whatever the overcommit policy.
            let count = (1 << 48) / ((leafWords + SelectorWords.padWords) * 4)
            let kept = cv_query_buffer_pooled_bytes()
            var code: PIRError.Code?
            do { _ = try SelectorWords(count: count, leafWords: leafWords) } catch { code = (error as? PIRError)?.code }
            let keptAfter = cv_query_buffer_pooled_bytes()
            let words = try? SelectorWords(count: 4, leafWords: leafWords)  // the pool still serves
            print("error \(String(describing: code)); kept \(kept) B before, \(keptAfter) B after; "
                  + "then \(words?.count ?? 0) leaves")
            exit(code == .outOfMemory && keptAfter == kept && words?.count == 4 ? 0 : 1)
        }
    }

    #if os(Linux)
    @Test("A query's selector mapping is on huge pages where the kernel offers them")
    func hugePages() throws {
        let mode = (try? String(contentsOfFile: "/sys/kernel/mm/transparent_hugepage/enabled", encoding: .utf8)) ?? ""
        let leafWords = 2 * 2 * 4096
        let words = try SelectorWords(count: 128, leafWords: leafWords)  // 8 MiB: at least three whole 2 MiB pages
        let address = UInt(bitPattern: words.pointer)
        let mapping = StartupPagesTests.mappings().first { $0.start <= address && address < $0.end }
        print("selector mapping: \(mapping?.anonHugePagesKiB ?? -1) KiB of huge pages; the kernel's mode: \(mode)")
        if mode.contains("[always]") || mode.contains("[madvise]") {
            #expect((mapping?.anonHugePagesKiB ?? 0) >= 2048)
        }
    }
    #endif
}
