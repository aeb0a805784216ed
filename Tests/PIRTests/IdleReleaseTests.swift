#if os(Linux)
import CKernels
import Foundation
import PIR
import Testing

/// The tuned allocator keeps freed buffers while requests come and gives them back once the process is idle. A
/// shard's build is followed by its caller freeing the file it read; that memory must go back too, or a freshly
/// loaded process holds megabytes of freed heap until its first request. Each test runs in a child process of its
/// own (an exit test): the allocator is process-wide, and other tests' queries would mark activity.
@Suite("Allocator idle release")
struct IdleReleaseTests {
    /// A KiB field of this process's `/proc/self/status` (`RssAnon:`, `RssFile:`), 0 when absent.
    static func statusKiB(_ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field) } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Anonymous resident memory of this process, in KiB.
    static func residentAnonymousKiB() -> Int { statusKiB("RssAnon:") }

    @Test("What a build's caller frees after the build goes back to the kernel once the process is idle")
    func releasedAfterBuild() async {
        await #expect(processExitsWith: .success) {
            MulPirServer.tuneAllocator()
            MulPirServer.setIdleRelease(milliseconds: 100)
            // 16 MiB in 128 KiB buffers: below the tuned mmap threshold, so in the heap, as a shard file read is.
            let buffers: [UnsafeMutableRawPointer] = (0..<128).map { _ in
                let p = malloc(128 << 10)!
                memset(p, 0x5a, 128 << 10)
                return p
            }
            // Kept: the freed buffers stay a free chunk below it instead of joining the heap's top, as a build's
            // inputs sit below what the build keeps.
            let fence = malloc(64)
            MulPirServer.transientBuild {}
            let held = IdleReleaseTests.residentAnonymousKiB()
            for p in buffers { free(p) }
            // Quiet for well over the idle time: the releaser wakes every quarter of it.
            try? await Task.sleep(for: .milliseconds(1500))
            let after = IdleReleaseTests.residentAnonymousKiB()
            print("anonymous resident: \(held) KiB with the buffers, \(after) KiB after freeing them and 1.5 s idle")
            free(fence)
            exit(held - after >= 12 << 10 ? 0 : 1)
        }
    }

    @Test("Two query buffers returned: one is unmapped as the last comes back, the other once the grace time passes, not when the process is idle")
    func queryBuffersReleased() async {
        await #expect(processExitsWith: .success) {
            MulPirServer.tuneAllocator()
            MulPirServer.setIdleRelease(milliseconds: 60_000)  // no idle release within the test
            MulPirServer.setQueryMappingGrace(milliseconds: 200)  // long enough that a loaded machine reads within it
            let size = 8 << 20  // a Live Caller ID query's selectors
            var lengths = [Int](repeating: 0, count: 2)
            let buffers = (0..<2).map { i in cv_query_buffer_alloc(size, &lengths[i])! }
            for p in buffers { memset(p, 0x5a, size) }
            let mapped = IdleReleaseTests.residentAnonymousKiB()
            MulPirServer.noteAllocatorActivity()
            cv_query_buffer_free(buffers[0], lengths[0])
            let keptWhileOneOut = cv_query_buffer_pooled_bytes()
            cv_query_buffer_free(buffers[1], lengths[1])
            let kept = cv_query_buffer_pooled_bytes()
            let afterBoth = IdleReleaseTests.residentAnonymousKiB()
            // Past the grace time; the idle release is a minute away.
            try? await Task.sleep(for: .milliseconds(700))
            let keptLater = cv_query_buffer_pooled_bytes()
            let after = IdleReleaseTests.residentAnonymousKiB()
            print("query buffers: \(mapped) KiB resident with them, \(keptWhileOneOut) B kept while one was out, "
                  + "\(kept) B kept and \(afterBoth) KiB resident once both were back, \(keptLater) B and \(after) KiB "
                  + "0.7 s later")
            exit(keptWhileOneOut == lengths[0] && kept == lengths[1] && mapped - afterBoth >= 6 << 10
                 && keptLater == 0 && mapped - after >= 14 << 10 ? 0 : 1)
        }
    }

    @Test("The key buffers kept for the next parsed key are unmapped once the process is idle")
    func keyBuffersReleased() async {
        await #expect(processExitsWith: .success) {
            MulPirServer.tuneAllocator()
            MulPirServer.setIdleRelease(milliseconds: 100)
            let size = 768 << 10  // a block key's compute form
            let buffers = (0..<16).map { _ in cv_key_buffer_alloc(size)! }
            for p in buffers { memset(p, 0x5a, size) }
            let mapped = IdleReleaseTests.residentAnonymousKiB()
            MulPirServer.noteAllocatorActivity()
            for p in buffers { cv_key_buffer_free(p, size) }
            let kept = cv_key_buffer_pooled_bytes()
            try? await Task.sleep(for: .milliseconds(1500))
            let after = IdleReleaseTests.residentAnonymousKiB()
            print("key buffers: \(mapped) KiB resident with them, \(kept) B kept once freed, "
                  + "\(cv_key_buffer_pooled_bytes()) B kept and \(after) KiB resident after 1.5 s idle")
            exit(kept == 16 * size && cv_key_buffer_pooled_bytes() == 0 && mapped - after >= 10 << 10 ? 0 : 1)
        }
    }
}
#endif
