#if os(Linux)
import CKernels
import Foundation
import Testing

/// Request bodies' memory (`cv_body_allocate`, NIO's allocator hooks for the bodies the service collects): from
/// 128 KiB a mapping of its own, outside the malloc heap, so a burst of key uploads leaves nothing for the tuned heap
/// to keep; below, the heap. Growth keeps the bytes written, across the threshold both ways.
@Suite("Body buffers")
struct BodyBufferTests {
    /// Fills `count` bytes at `p` with a pattern that depends on `seed`.
    static func fill(_ p: UnsafeMutableRawPointer, _ count: Int, seed: UInt8) {
        let bytes = p.assumingMemoryBound(to: UInt8.self)
        for i in 0..<count { bytes[i] = UInt8(truncatingIfNeeded: i &* 31) &+ seed }
    }

    /// Whether the first `count` bytes at `p` hold `fill`'s pattern.
    static func holds(_ p: UnsafeMutableRawPointer, _ count: Int, seed: UInt8) -> Bool {
        let bytes = p.assumingMemoryBound(to: UInt8.self)
        return (0..<count).allSatisfy { bytes[$0] == UInt8(truncatingIfNeeded: $0 &* 31) &+ seed }
    }

    @Test("A small body is in the heap, a large one in a mapping; growth keeps the bytes, in place or remapped")
    func growthKeepsBytes() {
        let small = 4 << 10, large = 700 << 10, larger = 3 << 20
        var p = cv_body_allocate(small)!
        #expect(cv_body_is_mapped(p) == 0)
        Self.fill(p, small, seed: 7)
        p = cv_body_reallocate(p, small, 64 << 10)!  // heap to heap
        #expect(cv_body_is_mapped(p) == 0 && Self.holds(p, small, seed: 7))
        Self.fill(p, 64 << 10, seed: 9)
        p = cv_body_reallocate(p, 64 << 10, large)!  // heap to a mapping
        #expect(cv_body_is_mapped(p) == 1 && Self.holds(p, 64 << 10, seed: 9))
        Self.fill(p, large, seed: 11)
        p = cv_body_reallocate(p, large, larger)!  // a mapping grown by remapping
        #expect(cv_body_is_mapped(p) == 1 && Self.holds(p, large, seed: 11))
        Self.fill(p, larger, seed: 13)
        p = cv_body_reallocate(p, larger, small)!  // back to the heap, its first bytes kept
        #expect(cv_body_is_mapped(p) == 0 && Self.holds(p, small, seed: 13))
        cv_body_deallocate(p)
        let direct = cv_body_allocate(large)!
        #expect(cv_body_is_mapped(direct) == 1)
        cv_body_deallocate(direct)
        let fromNothing = cv_body_reallocate(nil, 0, 100)!
        #expect(cv_body_is_mapped(fromNothing) == 0)
        cv_body_deallocate(fromNothing)
    }

    @Test("Large bodies held at once are not in the malloc heap, and freed they leave the process")
    func largeBodiesLeaveTheHeap() async {
        await #expect(processExitsWith: .success) {
            cv_tune_allocator()  // as the service runs: the heap would keep what is freed
            _ = cv_set_idle_release_ms(0)
            let before = cv_heap_in_use_bytes(), rssBefore = BodyBufferTests.rss()
            let bodies = (0..<8).map { i -> UnsafeMutableRawPointer in
                let p = cv_body_allocate(1 << 20)!
                BodyBufferTests.fill(p, 700 << 10, seed: UInt8(i))
                return p
            }
            let held = cv_heap_in_use_bytes() - before, rssHeld = BodyBufferTests.rss() - rssBefore
            bodies.forEach { cv_body_deallocate($0) }
            let rssAfter = BodyBufferTests.rss() - rssBefore
            print("8 bodies of 700 KB: heap in use +\(held) B while held; RSS +\(rssHeld >> 10) KiB held, +\(rssAfter >> 10) KiB freed")
            exit(held < 64 << 10 && rssHeld >= 8 * (600 << 10) && rssAfter < 1 << 20 ? 0 : 1)
        }
    }

    /// This process's resident bytes (`/proc/self/statm`).
    static func rss() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
#endif
