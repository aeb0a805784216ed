#if os(Linux)
import CKernels
import Foundation
import Testing

/// The queries' selector memory outside the malloc heap: a finished query's mapping serves the next query that fits in it while others are in use, the kept and in-use mappings together never
/// outnumber the most in use at once, and once none is in use none stays. Each test runs in a child process of its
/// own (an exit test): the pool is process-wide.
@Suite("Query buffer pool")
struct QueryBufferPoolTests {
    /// A mapping and the length the pool gave it.
    static func take(_ bytes: Int) -> (pointer: UnsafeMutableRawPointer, length: Int) {
        var length = 0
        let p = cv_query_buffer_alloc(bytes, &length)!
        memset(p, 0x5a, bytes)
        return (p, length)
    }

    @Test("One query at a time keeps nothing once it ends")
    func sequential() async {
        await #expect(processExitsWith: .success) {
            let small = (8 << 20) + 100
            let a = QueryBufferPoolTests.take(small)
            cv_query_buffer_free(a.pointer, a.length)
            let keptAfterOne = cv_query_buffer_pooled_bytes()
            let b = QueryBufferPoolTests.take(small)  // a new mapping, the first one gone
            cv_query_buffer_free(b.pointer, b.length)
            let keptAfterTwo = cv_query_buffer_pooled_bytes()
            print("\(keptAfterOne) B and \(keptAfterTwo) B kept after each query ended")
            exit(keptAfterOne == 0 && keptAfterTwo == 0 ? 0 : 1)
        }
    }

    @Test("Three at once keep what they return while any is in use; the last one back leaves none")
    func concurrent() async {
        await #expect(processExitsWith: .success) {
            let size = (4 << 20) + 4096
            let three = (0..<3).map { _ in QueryBufferPoolTests.take(size) }
            cv_query_buffer_free(three[0].pointer, three[0].length)
            cv_query_buffer_free(three[1].pointer, three[1].length)
            let keptWhileOneOut = cv_query_buffer_pooled_bytes()
            // A fourth query while one is out takes a kept mapping rather than a new one.
            let fourth = QueryBufferPoolTests.take(size)
            let reused = fourth.pointer == three[0].pointer || fourth.pointer == three[1].pointer
            cv_query_buffer_free(fourth.pointer, fourth.length)
            cv_query_buffer_free(three[2].pointer, three[2].length)
            let keptAfterLast = cv_query_buffer_pooled_bytes()
            cv_query_buffer_drain()
            let drained = cv_query_buffer_pooled_bytes()
            print("kept \(keptWhileOneOut) B with one of three still out (fourth reused one: \(reused)), "
                  + "\(keptAfterLast) B once none was out, \(drained) B after the drain")
            exit(keptWhileOneOut == 2 * three[0].length && reused && keptAfterLast == 0 && drained == 0
                 ? 0 : 1)
        }
    }
}
#endif
