#if os(Linux)
import CKernels
import Foundation
import Testing

/// The parsed keys' memory outside the malloc heap: an evicted key's mapping serves the next key of the same size,
/// and the mappings kept stay within the pool's bound. Each test runs in a child process of its own (an exit test):
/// the pool is process-wide, and other tests' keys, frees and drains would change what it holds.
@Suite("Key buffer pool")
struct KeyBufferPoolTests {
    @Test("A freed key buffer serves the next of the same size, not one of another size")
    func exactSizeReuse() async {
        await #expect(processExitsWith: .success) {
            let size = 3 * 4096 + 40
            let first = (0..<3).map { _ in cv_key_buffer_alloc(size)! }
            for p in first { p.storeBytes(of: 0xC0FFEE, as: UInt32.self) }
            for p in first { cv_key_buffer_free(p, size) }
            let other = cv_key_buffer_alloc(size + 4096)!
            let again = (0..<3).map { _ in cv_key_buffer_alloc(size)! }
            print("freed \(first), another size got \(other), the same size again \(again)")
            exit(!first.contains(other) && Set(again) == Set(first) ? 0 : 1)
        }
    }

    @Test("The pool keeps at most 48 MiB of freed key buffers and unmaps the rest")
    func bounded() async {
        await #expect(processExitsWith: .success) {
            let size = (4 << 20) + 4096
            let buffers = (0..<20).map { _ in cv_key_buffer_alloc(size)! }
            for p in buffers { cv_key_buffer_free(p, size) }
            let kept = cv_key_buffer_pooled_bytes()
            cv_key_buffer_drain()
            print("kept \(kept) B of 20 freed buffers of \(size) B; \(cv_key_buffer_pooled_bytes()) B after the drain")
            exit(kept > 0 && kept <= 48 << 20 && cv_key_buffer_pooled_bytes() == 0 ? 0 : 1)
        }
    }
}
#endif
