import Foundation
import ServiceTestSupport
import Testing

/// The parsed-key cache charges `EvaluationKey.memoryBytes` per key; this checks that charge against what 100 parsed
/// keys really cost, measured as RSS growth in a process of their own (`callveil-bench key-memory`), where no other test's
/// allocations move the number.
@Suite("Key cache memory")
struct KeyCacheMemoryTests {
    @Test("The cache's charge for 100 parsed keys is within 20% of the RSS they take")
    func chargeMatchesRSS() async throws {
        let report = try await runBenchProbe(["key-memory", "--count", "100"])
        let charged = try #require(report["charged"]), growth = try #require(report["rssGrowth"])
        print("100 parsed keys: charged \(charged) B, RSS grew \(growth) B")
        #expect(growth > 0)
        let ratio = Double(charged) / Double(growth)
        #expect(ratio > 0.8 && ratio < 1.2, "charged \(charged) B for an RSS growth of \(growth) B (\(ratio)×)")
    }
}
