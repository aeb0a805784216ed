import Foundation
import ServiceTestSupport
import Testing

/// The tuned allocator keeps a burst's freed buffers for the next requests and gives them back once the process is
/// idle; measured in a process of its own (`callveil-bench allocator-release`), where no other test's allocations move
/// the RSS.
@Suite("Allocator release when idle")
struct AllocatorReleaseTests {
    @Test("128 MiB freed after a burst stays resident while busy and is given back once idle")
    func idleProcessGivesMemoryBack() async throws {
        let report = try await runBenchProbe(["allocator-release", "--megabytes", "128"])
        let before = try #require(report["before"]), kept = try #require(report["kept"]), idle = try #require(report["idle"])
        print("allocator: RSS \(before >> 20) MiB before, \(kept >> 20) MiB right after freeing 128 MiB, \(idle >> 20) MiB idle")
        // Kept while busy (what the tuning is for), and at most 16 MiB of it left once idle.
        #expect(kept - before > 96 << 20)
        #expect(idle - before < 16 << 20, "\((idle - before) >> 20) MiB still resident once idle")
        #expect(report["releases"] == 1)
    }
}
