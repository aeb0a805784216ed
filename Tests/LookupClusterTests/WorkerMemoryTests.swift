import Foundation
import LoadGeneration
import LookupClient
import LookupCoordinator
import LookupService
import LookupWorker
import ServiceTestSupport
import Testing

/// Memory-mapped shards: a worker whose shards exceed its memory budget serves the rest from mapped scan files,
/// and a restarted worker maps its cached scan files instead of rebuilding the evaluation form. Phones check
/// every answer while the worker is killed, restarted and a scan file is damaged.
@Suite("Worker memory budget and scan cache", .serialized)
struct WorkerMemoryTests {
    static let budget = 150_000

    @Test("Shards beyond a 150 kB budget are served mapped; kill -9 and restart maps them from the cache, a damaged one is rebuilt")
    func budgetAndRestart() async throws {
        let cluster = try await ClusterTests.start(replication: 2, count: 150)
        func budgeted() throws -> ClusterWorker { try cluster.worker("small") { $0.memoryBudget = Self.budget } }
        var small = try budgeted()
        let other = try cluster.worker("other")
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(30)))
        let shards = cluster.coordinator.desiredState.shards(on: "small").count
        let first = small.shardMemory
        print("budget \(Self.budget) B: \(first.resident) B in memory, \(first.mapped) B mapped, \(shards) shards")
        #expect(first.resident <= Self.budget && first.mapped > 0, "the shards exceed the budget: some must be mapped")
        #expect(first.scanCacheLoads == 0)
        let scanFiles = try Self.scanFiles(in: "\(cluster.directory)/worker-small")
        #expect(scanFiles.count == shards)

        let truth = try LoadGenerator.Truth(records: cluster.data.records, absent: [DemoDataset.absentNumber])
        func phones() -> LoadGenerator {
            LoadGenerator(url: cluster.server.url, blockUseCase: DemoDataset.block, identityUseCase: DemoDataset.identity,
                          phones: 2, userToken: "AAAA", retry: .init(retries: 30, maxWaitSeconds: 1))
        }
        // Only the budgeted worker serving: every answer comes from memory or a mapping.
        other.stop()
        #expect(try await eventually { cluster.coordinator.workers.count == 1 })
        let alone = try await phones().run(mode: .closed, duration: .seconds(3), truth: truth)
        print("budgeted worker alone: \(alone.lookups) lookups, \(alone.mismatches) wrong, \(alone.errors) errors")
        #expect(alone.lookups > 0 && alone.mismatches == 0 && alone.errors == 0)
        let back = try cluster.worker("other")

        // Damage one scan file, kill -9, restart under load: the rest are mapped from the cache, the damaged one rebuilt.
        let damaged = try #require(scanFiles.first)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: damaged))
        try handle.seek(toOffset: 5000)
        try handle.write(contentsOf: Data([0xA5, 0x5A]))
        try handle.close()
        let load = Task { try await phones().run(mode: .closed, duration: .seconds(6), truth: truth) }
        try await Task.sleep(for: .milliseconds(500))
        small.kill()
        try await Task.sleep(for: .milliseconds(300))
        let start = ContinuousClock.now
        small = try budgeted()
        #expect(try await eventually(seconds: 20) { small.loadedShards.count == shards })
        let restart = ContinuousClock.now - start
        let after = small.shardMemory
        print("restart: \(shards) shards loaded in \(restart) (\(after.scanCacheLoads) mapped from the cache); " +
              "\(after.resident) B in memory, \(after.mapped) B mapped")
        #expect(after.scanCacheLoads == shards - 1, "every intact scan file is mapped, the damaged one is not")
        #expect(small.transfersStarted == 0, "the compact files on disk are reused")
        #expect(after.resident <= Self.budget && after.resident + after.mapped == first.resident + first.mapped)
        let during = try await load.value
        print("under load during the restart: \(during.lookups) lookups, \(during.mismatches) wrong, \(during.errors) errors")
        #expect(during.lookups > 0 && during.mismatches == 0 && during.errors == 0)
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(10)))
        // The rebuilt scan file is whole again.
        #expect(try Self.scanFiles(in: "\(cluster.directory)/worker-small").count == shards)
        for worker in [small, back] { worker.stop() }
        await cluster.stop()
    }

    static func scanFiles(in directory: String) throws -> [String] {
        (FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix(".scan") }.map { "\(directory)/\($0)" }.sorted()
    }
}
