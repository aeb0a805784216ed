#if os(Linux)
import CKernels
import Foundation
import Testing

/// The queries' selector memory outside the malloc heap: a finished query's mapping serves the next query that fits in
/// it while others are in use, the kept and in-use mappings together never outnumber the most in use at once, and once
/// none is in use only the largest stays, for the grace time (`cv_set_query_keep_ms`). Each test runs in a child
/// process of its own (an exit test): the pool is process-wide.
@Suite("Query buffer pool")
struct QueryBufferPoolTests {
    /// A mapping and the length the pool gave it.
    static func take(_ bytes: Int) -> (pointer: UnsafeMutableRawPointer, length: Int) {
        var length = 0
        let p = cv_query_buffer_alloc(bytes, &length)!
        memset(p, 0x5a, bytes)
        return (p, length)
    }

    /// Kept bytes once they reach zero, polled for up to a second.
    static func keptOnceReleased() -> Int {
        for _ in 0..<100 where cv_query_buffer_pooled_bytes() != 0 { usleep(10_000) }
        return cv_query_buffer_pooled_bytes()
    }

    @Test("One query at a time: the next one within the grace time reuses the mapping, and none stays after it")
    func sequential() async {
        await #expect(processExitsWith: .success) {
            _ = cv_set_query_keep_ms(250)
            let small = (8 << 20) + 100
            let a = QueryBufferPoolTests.take(small)
            cv_query_buffer_free(a.pointer, a.length)
            let keptAfterOne = cv_query_buffer_pooled_bytes()
            // Within the grace time: the same mapping, still holding the first query's bytes (a new one is zeroed,
            // and may even be mapped at the same address).
            var length = 0
            let b = (pointer: cv_query_buffer_alloc(small, &length)!, length: length)
            let reused = b.pointer.load(fromByteOffset: small - 1, as: UInt8.self) == 0x5a
            cv_query_buffer_free(b.pointer, b.length)
            let started = DispatchTime.now().uptimeNanoseconds
            // A query whose mapping the host cannot give neither takes the kept one nor stops its release.
            var none = 0
            let failed = cv_query_buffer_alloc(1 << 48, &none) == nil
            let keptAfterGrace = QueryBufferPoolTests.keptOnceReleased()
            let waited = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
            // With no grace time, the last one back goes at once.
            _ = cv_set_query_keep_ms(0)
            let c = QueryBufferPoolTests.take(small)
            cv_query_buffer_free(c.pointer, c.length)
            let keptWithoutGrace = cv_query_buffer_pooled_bytes()
            print("\(keptAfterOne) B kept after the first query, the second reused it: \(reused); "
                  + "\(keptAfterGrace) B kept \(Int(waited)) ms later (failed alloc: \(failed)); "
                  + "\(keptWithoutGrace) B without grace time")
            exit(keptAfterOne == a.length && reused && failed && keptAfterGrace == 0
                 && waited >= 200 && keptWithoutGrace == 0 ? 0 : 1)
        }
    }

    @Test("Three at once keep what they return while any is in use; the last one back leaves one for the grace time")
    func concurrent() async {
        await #expect(processExitsWith: .success) {
            _ = cv_set_query_keep_ms(1000)  // long enough that a loaded machine reads the pool within it
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
            // Once none is out, one mapping stays for the grace time; the drain takes it too.
            exit(keptWhileOneOut == 2 * three[0].length && reused && keptAfterLast == three[0].length && drained == 0
                 ? 0 : 1)
        }
    }
}
#endif
