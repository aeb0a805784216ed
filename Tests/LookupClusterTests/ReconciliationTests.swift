import ClusterTransport
import ConformanceSupport
import Foundation
import LookupClient
import LookupCoordinator
import LookupDeployment
import LookupProtocol
import LookupService
import LookupWorker
import ServiceTestSupport
import Synchronization
import Testing
import ZeroMQ

/// The level-triggered control plane under faults: data updates with the same config id, a worker restarted
/// within the heartbeat timeout, lost control messages, corrupted transfers. Every answer is decrypted and checked.
@Suite("Reconciliation", .serialized)
struct ReconciliationTests {
    /// Looks `record` up until it answers `new` (each answer must be `old` or `new`, never an error); returns
    /// the seconds it took and the number of answers checked.
    static func waitForValue(_ device: LookupDevice, number: String, old: [UInt8], new: [UInt8],
                             within: Duration = .seconds(10)) async throws -> (seconds: Double, answers: Int) {
        let start = ContinuousClock.now
        var answers = 0
        while ContinuousClock.now - start < within {
            let value = try await device.lookup(Array(number.utf8), in: DemoDataset.block)
            answers += 1
            #expect(value == old || value == new, "answer \(value) is neither the old nor the new value")
            if value == new {
                let (s, atto) = (ContinuousClock.now - start).components
                return (Double(s) + Double(atto) / 1e18, answers)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the new value was not served within \(within)")
        return (.infinity, answers)
    }

    /// Reprocesses the dataset with record `flip`'s block value changed (same fixed shard configuration), reloads,
    /// and checks the new value is served within 10 s with only old or new values in between.
    static func sameConfigUpdate(server: TestServer, directory: String, data: DemoDataset, flip: Int) async throws {
        let device = server.device()
        let record = data.records[flip]
        let old: [UInt8] = [record.block ? 1 : 0], new: [UInt8] = [record.block ? 0 : 1]
        #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == old)
        let before = try #require(server.server.registry.newest(DemoDataset.block)).configIDHex
        _ = try DemoDataset.make(in: directory, count: data.records.count, flipBlock: flip)
        #expect(try await server.server.reload().isEmpty)
        #expect(try #require(server.server.registry.newest(DemoDataset.block)).configIDHex == before)
        let (seconds, answers) = try await waitForValue(device, number: record.number, old: old, new: new)
        print("same-config-id update: new value after \(String(format: "%.2f", seconds)) s, \(answers) answers checked")
        #expect(seconds <= 10)
    }

    /// `callveil serve`'s shape on 120 demo numbers: an embedded coordinator spooling to `<directory>/spool` and one
    /// embedded worker.
    static func embedded() async throws -> (String, DemoDataset, EmbeddedCluster, String, TestServer, [ClusterWorker]) {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 120)
        let cluster = try EmbeddedCluster()
        let spool = "\(directory)/spool"
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases),
                                                makeExecutor: cluster.makeExecutor(logger: TestServer.logger, spoolDirectory: spool))
        let workers = try await cluster.startWorkers(count: 1, dataDirectory: "\(directory)/embedded", threads: 1, server: server.server,
                                                     logger: TestServer.logger)
        return (directory, data, cluster, spool, server, workers)
    }

    @Test("Default serve (embedded coordinator + worker, shard files spooled): a data update with the same config id serves the new value; the spool keeps only the desired content")
    func embeddedSameConfigUpdate() async throws {
        let (directory, data, cluster, spool, server, workers) = try await Self.embedded()
        let coordinator = try #require(server.server.executor as? ClusterCoordinator)
        func spooled() -> Set<String> {  // the shard files and their temporaries, not the holder's `.lock`
            Set((try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? []).subtracting([".lock"])
        }
        func desiredFiles() -> Set<String> {
            Set(coordinator.desiredState.shards.values.map { URL(fileURLWithPath: TransferSource.spoolPath(sha256: $0.sha256, in: spool)).lastPathComponent })
        }
        #expect(!desiredFiles().isEmpty && spooled() == desiredFiles(), "every shard file is spooled, nothing else")
        #expect(coordinator.transferBytesInMemory == 0, "the coordinator holds no shard file in memory")
        let before = spooled()
        let sentBefore = Self.transferBytes(cluster, server)
        try await Self.sameConfigUpdate(server: server, directory: directory, data: data, flip: 3)
        #expect(await coordinator.waitUntilConverged(timeout: .seconds(10)))
        // The worker held the old content: the update travelled as a patch of the changed ranges, not whole.
        let sent = Self.transferBytes(cluster, server)
        print("same-config-id update: \(sent.patch - sentBefore.patch) patch bytes, \(sent.whole - sentBefore.whole) whole-shard bytes sent")
        #expect(workers[0].patches.applied == 1 && workers[0].patches.refused == 0, "patches \(workers[0].patches)")
        #expect(sent.patch > sentBefore.patch && sent.whole == sentBefore.whole, "bytes sent before \(sentBefore), after \(sent)")
        // The changed shard's new file replaced its old one; the others are the same files.
        #expect(spooled() == desiredFiles() && spooled() != before && spooled().intersection(before).count == before.count - 1,
                "spool before \(before.sorted()), after \(spooled().sorted())")
        // The cluster hop and the worker's stages are timed into the process's histograms.
        // (This test's service keeps metrics of its own, which its workers share; `callveil serve` gives all one.)
        let clusterMetrics = String(decoding: cluster.metrics.exposition(), as: UTF8.self)
        let serviceMetrics = String(decoding: server.server.metrics.exposition(), as: UTF8.self)
        let hops = stageCount(clusterMetrics, "cluster_round_trip"), computes = stageCount(serviceMetrics, "compute")
        #expect(hops >= 1 && computes >= hops && stageCount(serviceMetrics, "execution") >= hops,
                "round trips \(hops), computes \(computes), executions \(stageCount(serviceMetrics, "execution"))")
        for worker in workers { worker.stop() }
        await server.stop()
        coordinator.shutdown()
    }

    /// Compressed shard bytes the coordinator sent workers, whole and as patches.
    static func transferBytes(_ cluster: EmbeddedCluster, _ server: TestServer) -> (whole: Double, patch: Double) {
        let expositions = [cluster.metrics.exposition(), server.server.metrics.exposition()].map { String(decoding: $0, as: UTF8.self) }
        func sum(_ kind: String) -> Double {
            expositions.reduce(0) { $0 + metricValue($1, "callveil_cluster_transfer_bytes_total{kind=\"\(kind)\"}") }
        }
        return (sum("whole"), sum("patch"))
    }

    @Test("A worker whose copy of the old content is damaged on disk: the patch does not apply, the whole shard is fetched, the new value served")
    func damagedPatchBase() async throws {
        let (directory, data, cluster, _, server, workers) = try await Self.embedded()
        let coordinator = try #require(server.server.executor as? ClusterCoordinator)
        #expect(await coordinator.waitUntilConverged(timeout: .seconds(10)))
        // Every block shard file the worker keeps, overwritten with other bytes of its size (it serves from memory).
        let folder = "\(directory)/embedded/0/\(DemoDataset.block)"
        let files = (FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? []).filter { $0.hasSuffix(".cvshard") }
        #expect(!files.isEmpty)
        for file in files {
            let size = try #require(FileManager.default.attributesOfItem(atPath: "\(folder)/\(file)")[.size] as? NSNumber).intValue
            try Data(repeating: 0xA5, count: size).write(to: URL(fileURLWithPath: "\(folder)/\(file)"))
        }
        let sentBefore = Self.transferBytes(cluster, server)
        try await Self.sameConfigUpdate(server: server, directory: directory, data: data, flip: 4)
        #expect(await coordinator.waitUntilConverged(timeout: .seconds(10)))
        let sent = Self.transferBytes(cluster, server)
        #expect(workers[0].patches.applied == 0 && workers[0].patches.refused == 1, "patches \(workers[0].patches)")
        #expect(sent.patch > sentBefore.patch && sent.whole > sentBefore.whole, "bytes sent before \(sentBefore), after \(sent)")
        for worker in workers { worker.stop() }
        await server.stop()
        coordinator.shutdown()
    }

    @Test("A spool that cannot be written fails the reload, not the service: the old content keeps answering, and the next reload after the fix serves the new")
    func spoolFailureKeepsServing() async throws {
        let (directory, data, cluster, spool, server, workers) = try await Self.embedded()
        let device = server.device()
        let record = data.records[5]
        let old: [UInt8] = [record.block ? 1 : 0], new: [UInt8] = [record.block ? 0 : 1]
        // The spool's place taken by a file: every write there fails.
        try FileManager.default.removeItem(atPath: spool)
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: spool))
        _ = try DemoDataset.make(in: directory, count: data.records.count, flipBlock: 5)
        let failed = try await server.server.reload()
        #expect(failed.contains(DemoDataset.block), "the reload reports the use case it could not install: \(failed)")
        for _ in 0..<3 {
            #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == old, "the previous content still answers")
        }
        try FileManager.default.removeItem(atPath: spool)
        #expect(try await server.server.reload().isEmpty)
        let (seconds, _) = try await Self.waitForValue(device, number: record.number, old: old, new: new)
        #expect(seconds <= 10)
        for worker in workers { worker.stop() }
        await server.stop()
        (server.server.executor as? ClusterCoordinator)?.shutdown()
    }

    @Test("TCP workers: a same-config-id update, then kill -9 and restart within, at and past the heartbeat timeout: shards back within 10 s from disk")
    func tcpUpdateAndRestart() async throws {
        let cluster = try await ClusterTests.start(replication: 2, count: 150)
        var workers = [try cluster.worker("a"), try cluster.worker("b")]
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(30)))
        try await Self.sameConfigUpdate(server: cluster.server, directory: cluster.directory, data: cluster.data, flip: 7)
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(10)))
        // Both replicas of the one changed shard took the update as a patch over TCP.
        #expect(workers.map(\.patches.applied) == [1, 1] && workers.allSatisfy { $0.patches.refused == 0 },
                "patches \(workers.map(\.patches))")
        // Old content files are deleted once the new content is loaded.
        // The shards "a" must hold, counted while it is in the placement (past the heartbeat timeout below, it leaves
        // the placement until it registers again).
        let held = cluster.coordinator.desiredState.shards(on: "a").count
        #expect(held > 0)
        let files = FileManager.default.enumerator(atPath: "\(cluster.directory)/worker-a")?.compactMap { $0 as? String } ?? []
        #expect(files.filter { $0.hasSuffix(".cvshard") }.count == held)

        // kill -9 and back within the heartbeat timeout (1 s here), at it, and past it.
        for pause in [Duration.milliseconds(300), .seconds(1), .seconds(2)] {
            workers[0].kill()
            try await Task.sleep(for: pause)
            let start = ContinuousClock.now
            workers[0] = try cluster.worker("a")
            while workers[0].loadedShards.count < held || cluster.coordinator.desiredState.shards(on: "a").count < held,
                  ContinuousClock.now - start < .seconds(10) {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(10)))
            print("worker restarted after \(pause): converged in \(ContinuousClock.now - start)")
            #expect(workers[0].transfersStarted == 0, "shards on disk with a matching hash are reused, not transferred")
            #expect(cluster.coordinator.desiredState.shards(on: "a").count == held)
            #expect(workers[0].loadedShards.count == held)
        }
        let device = cluster.server.device()
        for record in cluster.data.records.prefix(6) {
            let expected: [UInt8] = [(record.block) != (record.number == cluster.data.records[7].number) ? 1 : 0]
            #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == expected)
        }
        for worker in workers { worker.stop() }
        await cluster.stop()
    }

    @Test("20% of control messages lost at random (seeded): the cluster still converges to the desired placement")
    func lossyControlPlane() async throws {
        let seed = TestRandom().seed  // printed; CALLVEIL_SEED replays it
        let faults = LinkFaults(dropRate: 0.2, seed: seed)
        // A realistic heartbeat timeout (3 s, the default): with 1 s, two lost heartbeats in a row would declare a worker dead.
        let cluster = try await ClusterTests.start(replication: 2, count: 150, chunkBytes: 16384, faults: faults, heartbeatTimeout: .seconds(3))
        let workers = try ["a", "b", "c"].map { id in try cluster.worker(id, faults: LinkFaults(dropRate: 0.2, seed: seed &+ UInt64(id.utf8.first!))) }
        // Every message passes two 20% drops (the sender's and the receiver's), so a chunk's round trip is lost
        // 59% of the time. Alone this converges in 15-35 s (a lost chunk asked again after ~200 ms; with the fixed
        // 2 s wait it was 48-55 s alone and up to 102 s in CI): the bound is a liveness check, not a speed target.
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(120)))
        let desired = cluster.coordinator.desiredState
        let actual = cluster.coordinator.actualState
        for (key, holders) in desired.placement {
            #expect(holders.count == 2)
            for holder in holders { #expect(actual[holder]?[key] == desired.shards[key]?.sha256) }
        }
        #expect(faults.tally.dropped > 0)
        print("lossy control plane: coordinator dropped \(faults.tally.dropped) of \(faults.tally.dropped + faults.tally.passed) control messages; "
              + "chunk requests sent again \(workers.map(\.transferRetries))")
        let device = cluster.server.device()
        #expect(try await device.wrongBlockAnswers(cluster.data.records.prefix(4)) == [])
        for worker in workers { worker.stop() }
        await cluster.stop()
    }

    @Test("Lost chunks and chunk requests are asked for again within a few round trips: a transfer completes although the longest wait and the coordinator's first re-send are a minute")
    func lostChunksAskedAgain() async throws {
        let seed = TestRandom().seed  // printed; CALLVEIL_SEED replays it
        // A quarter of chunk requests and of chunks lost at the coordinator (about 44% of round trips), 16 KiB
        // chunks: about 40 chunk round trips. Nothing else is lost, and the coordinator re-sends an assign only
        // after a minute, so only the worker's own timer can ask again within the bound.
        let faults = LinkFaults(dropRate: 0.25, seed: seed) { message in
            switch message.body {
            case .transferRequest?, .chunk?: return true
            default: return false
            }
        }
        let cluster = try await ClusterTests.start(replication: 1, count: 150, chunkBytes: 16384, faults: faults, heartbeatTimeout: .seconds(3)) {
            $0.resendBase = .seconds(60)
            $0.resendMax = .seconds(60)
        }
        let worker = try cluster.worker("w") { $0.transferStall = .seconds(60) }
        let converged = await cluster.coordinator.waitUntilConverged(timeout: .seconds(40))
        print("lost chunks: \(faults.tally.dropped) of \(faults.tally.dropped + faults.tally.passed) control messages dropped; "
              + "\(worker.transferRetries) chunk requests sent again; converged \(converged)")
        #expect(converged)
        #expect(worker.transferRetries > 0)
        let device = cluster.server.device()
        #expect(try await device.wrongBlockAnswers(cluster.data.records.prefix(4)) == [])
        worker.stop()
        await cluster.stop()
    }

    @Test("A corrupted .partial file fails the whole-shard checksum: detected, reported, fetched again")
    func corruptedPartial() async throws {
        let (cluster, partial) = try await ClusterTests.killedMidTransfer()
        let path = try #require(partial)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[100] ^= 0xFF  // a bit flip on disk, in a chunk already verified
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let worker = try cluster.worker("w")
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(60)))
        #expect(worker.wholeShardFailures >= 1)
        let device = cluster.server.device()
        #expect(try await device.wrongBlockAnswers(cluster.data.records.prefix(4)) == [])
        worker.stop()
        await cluster.stop()
    }
}

/// Admission and revocation by reloading the allow-list (SIGHUP in production).
@Suite("Allow-list reload", .serialized)
struct AllowListReloadTests {
    @Test("A worker added to the allow-list is admitted on reload; a removed one is forgotten and its shards re-placed")
    func admitAndRevoke() async throws {
        let server = try CurveKeyPair.generate(), a = try CurveKeyPair.generate(), b = try CurveKeyPair.generate()
        let allowed = Mutex([a.publicKey: "a"])
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 60)
        let context = try ZMQContext()
        let box = Mutex<ClusterCoordinator?>(nil)
        let http = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases)) { environment in
            var options = ClusterCoordinator.Options(bind: "tcp://127.0.0.1:0")
            options.replication = 1
            options.heartbeatTimeout = .seconds(1)
            options.curve = (server, allowed.withLock { $0 })
            options.allowList = { allowed.withLock { $0 } }
            let coordinator = try ClusterCoordinator(context: context, options: options, keyStore: environment.keyStore, logger: TestServer.logger)
            box.withLock { $0 = coordinator }
            return coordinator
        }
        let coordinator = try #require(box.withLock { $0 })
        func worker(_ id: String, _ keys: CurveKeyPair) throws -> ClusterWorker {
            var options = ClusterWorker.Options(coordinator: coordinator.endpoint, dataDirectory: "\(directory)/worker-\(id)", workerID: id)
            options.threads = 1
            options.curve = (keys, [server.publicKey])
            return try ClusterWorker(context: context, options: options, logger: TestServer.logger)
        }
        let workerA = try worker("a", a), refused = try worker("b", b)
        #expect(await coordinator.waitUntilConverged(timeout: .seconds(20)))
        #expect(coordinator.workers.keys.sorted() == ["a"])
        #expect(coordinator.refusedConnections >= 1)
        refused.kill()
        // Admit b: listed, reloaded, then started (libzmq does not retry a handshake the ZAP handler refused).
        allowed.withLock { $0[b.publicKey] = "b" }
        #expect(try await http.server.reload().isEmpty)
        let workerB = try worker("b", b)
        var admitted = false
        for _ in 0..<200 where !admitted {
            try await Task.sleep(for: .milliseconds(50))
            admitted = coordinator.workers.keys.sorted() == ["a", "b"]
        }
        #expect(admitted)
        #expect(await coordinator.waitUntilConverged(timeout: .seconds(20)))
        // Revoke a: forgotten at once, its shards move to b, queries keep working.
        _ = allowed.withLock { $0.removeValue(forKey: a.publicKey) }
        #expect(try await http.server.reload().isEmpty)
        #expect(!coordinator.workers.keys.contains("a"))
        #expect(await coordinator.waitUntilConverged(timeout: .seconds(20)))
        #expect(coordinator.workers.keys.sorted() == ["b"])
        try await Task.sleep(for: .seconds(1))
        #expect(coordinator.workers.keys.sorted() == ["b"], "a revoked worker's heartbeats are refused")
        let device = http.device()
        #expect(try await device.wrongBlockAnswers(data.records.prefix(3)) == [])
        workerA.kill()
        workerB.stop()
        await http.stop()
        coordinator.shutdown()
    }
}
