import CKernels
import Testing

/// The parsed keys' memory outside the malloc heap: an evicted key's mapping serves the next key of the same size,
/// and the mappings kept stay within the pool's bound.
@Suite("Key buffer pool")
struct KeyBufferPoolTests {
    @Test("A freed key buffer serves the next of the same size, not one of another size")
    func exactSizeReuse() throws {
        let size = 3 * 4096 + 40  // a size no parsed key has, so other tests' keys do not take these buffers
        let first = try (0..<3).map { _ in try #require(cv_key_buffer_alloc(size)) }
        for p in first { p.storeBytes(of: 0xC0FFEE, as: UInt32.self) }
        for p in first { cv_key_buffer_free(p, size) }
        let other = try #require(cv_key_buffer_alloc(size + 4096))
        #expect(!first.contains(other))
        let again = try (0..<3).map { _ in try #require(cv_key_buffer_alloc(size)) }
        #expect(Set(again) == Set(first), "the three freed buffers are handed out again")
        for p in again { cv_key_buffer_free(p, size) }
        cv_key_buffer_free(other, size + 4096)
    }

    @Test("The pool keeps at most 48 MiB of freed key buffers and unmaps the rest")
    func bounded() throws {
        let size = (4 << 20) + 4096
        let buffers = try (0..<20).map { _ in try #require(cv_key_buffer_alloc(size)) }
        for p in buffers { cv_key_buffer_free(p, size) }
        #expect(cv_key_buffer_pooled_bytes() <= 48 << 20)
        cv_key_buffer_drain()
        #expect(cv_key_buffer_pooled_bytes() < 48 << 20)
    }
}
