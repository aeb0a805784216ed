import ClusterTransport
import Foundation
import LookupClient
import LookupCoordinator
import LookupProtocol
import LookupService
import ServiceTestSupport
import Testing

/// The life of an evaluation key in the cluster: pushed only to the workers that serve its key config, expired
/// on schedule with an explicit drop on every worker that parsed it, refused once expired.
@Suite("Key lifecycle in the cluster", .serialized)
struct KeyLifecycleTests {
    @Test("A key is pushed only to workers placed to serve its key config")
    func pushedOnlyToServingWorkers() async throws {
        // 3 shards (2 block, 1 identity), replication 1, 4 workers: one worker serves nothing.
        let cluster = try await ClusterTests.start(replication: 1, identityShards: 1)
        let workers = try ["w1", "w2", "w3", "w4"].map { try cluster.worker($0) }
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 1))
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(30)))
        let desired = cluster.coordinator.desiredState
        let blockKeyConfig = try #require(desired.shards.values.first { $0.key.useCase == DemoDataset.block }?.keyConfigHash)
        let serving = Set(["w1", "w2", "w3", "w4"].filter { worker in
            desired.shards(on: worker).contains { $0.keyConfigHash == blockKeyConfig }
        })
        #expect(serving.count >= 1 && serving.count < 4)
        // The device looks a number up in the block use case: it uploads the key of the block key config only.
        let device = cluster.server.device()
        let record = cluster.data.records[5]
        #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == record.blockValue)
        // One push per worker serving that key config, none to the others.
        #expect(cluster.coordinator.keyPushes == serving.count)
        for worker in workers { worker.stop() }
        await cluster.stop()
    }

    @Test("With two replicas of every shard, a phone's key is pushed to one of them and its queries go there: each worker parses only its share of the phones")
    func keyAffinity() async throws {
        let cluster = try await ClusterTests.start(replication: 2, identityShards: 1)
        let workers = [try cluster.worker("w1"), try cluster.worker("w2")]
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 2))
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(30)))
        // Fixed identifiers, so the split between the two workers is the same every run. A query that went to the
        // other replica would parse the key there too (a miss), so the keys held add up to the phones only if
        // every query went where the key was pushed.
        let devices = (0..<8).map { cluster.server.device(userIdentifier: "phone-\($0)") }
        for (i, device) in devices.enumerated() {
            for record in cluster.data.records[(i * 3)..<(i * 3 + 3)] {  // one at a time: the affinity replica has credit
                #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == record.blockValue)
            }
        }
        // One push per key (every shard's affinity replica is the same worker for a phone); the old routing pushed
        // every key to both and both parsed it.
        #expect(cluster.coordinator.keyPushes == devices.count)
        let held = workers.map(\.keyCounts.held)
        print("parsed keys held per worker: \(held)")
        #expect(held.reduce(0, +) == devices.count)
        #expect(held.allSatisfy { $0 > 0 })
        for worker in workers { worker.stop() }
        await cluster.stop()
    }

    @Test("An expired key is dropped by every worker that parsed it and refused by the coordinator")
    func expiryDropsParsedKeys() async throws {
        let cluster = try await ClusterTests.start(replication: 2, keyMaxAge: 4)
        let workers = [try cluster.worker("a"), try cluster.worker("b")]
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(30)))
        let device = cluster.server.device()
        for record in cluster.data.records.prefix(4) {
            #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == record.blockValue)
        }
        // The key lives where the device's queries go: its affinity replica (and any a query spilled over to).
        let held = workers.map(\.keyCounts.held)
        #expect(held.allSatisfy { $0 <= 1 } && held.reduce(0, +) >= 1)
        // A query prepared now and sent after expiry carries the expired key's timestamp.
        let record = cluster.data.records[7]
        let stale = try await device.queryRequest(Array(record.number.utf8), in: DemoDataset.block)

        // Within the maximum age plus the coordinator's slack (a tenth of it) and a Hello, every worker drops it.
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, workers.contains(where: { $0.keyCounts.held > 0 }) {
            try await Task.sleep(for: .milliseconds(100))
        }
        for (worker, parsed) in zip(workers, held) {
            #expect(worker.keyCounts.held == 0)
            #expect(worker.keyCounts.expired == parsed)
        }
        let refused = try await cluster.server.post("/queries", body: try stale.serializedBytes(),
                                                    headers: [("User-Identifier", device.userIdentifier),
                                                              ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 test")])
        #expect(refused.status == 400)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("Evaluation key not found"))
        // The device re-syncs, as a phone does after "key not found": its key status reads 0, it uploads a new
        // key and is answered again.
        try await device.syncConfig([DemoDataset.block])
        #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == record.blockValue)
        for worker in workers { worker.stop() }
        await cluster.stop()
    }
}
