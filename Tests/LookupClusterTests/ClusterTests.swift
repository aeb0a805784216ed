import ClusterTransport
import Dispatch
import Foundation
import LoadGeneration
import LookupClient
import LookupCoordinator
import LookupEngine
import LookupProtocol
import LookupService
import LookupWorker
import PIR
import ServiceTestSupport
import Synchronization
import Testing
import ZeroMQ

/// The cluster: a coordinator routing to workers over ZeroMQ (TCP on loopback), behind the same HTTP service.
@Suite("Cluster", .serialized)
struct ClusterTests {
    struct Cluster {
        let server: TestServer
        let coordinator: ClusterCoordinator
        let context: ZMQContext
        let directory: String
        let data: DemoDataset

        func worker(_ id: String, keys: CurveKeyPair? = nil, serverKey: String? = nil, faults: LinkFaults? = nil,
                    pool: ComputePool? = nil, credit: Int? = nil,
                    edit: (inout ClusterWorker.Options) -> Void = { _ in }) throws -> ClusterWorker {
            var options = ClusterWorker.Options(coordinator: coordinator.endpoint, dataDirectory: "\(directory)/worker-\(id)", workerID: id)
            options.threads = 1
            options.faults = faults
            options.pool = pool
            options.credit = credit
            if let keys, let serverKey { options.curve = (keys, [serverKey]) }
            edit(&options)
            return try ClusterWorker(context: context, options: options, logger: TestServer.logger)
        }

        func stop() async {
            await server.stop()
            coordinator.shutdown()
        }
    }

    /// Waits (up to 2 s) until a `.partial` shard file of at least `atLeast` bytes is under `directory`; its path.
    static func waitForPartialFile(in directory: String, atLeast: Int) async throws -> String? {
        for _ in 0..<400 {
            let files = FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? []
            let found = files.first { name in
                name.hasSuffix(".partial")
                    && ((try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)")[.size] as? NSNumber)?.intValue ?? 0) >= atLeast
            }
            if let found { return "\(directory)/\(found)" }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    static func start(replication: Int = 2, curve: (CurveKeyPair, [String: String])? = nil, count: Int = 150,
                      chunkBytes: Int = 1 << 20, faults: LinkFaults? = nil,
                      heartbeatTimeout: Duration = .seconds(1), identityShards: Int = 2, keyMaxAge: Int? = nil,
                      edit: @escaping @Sendable (inout ClusterCoordinator.Options) -> Void = { _ in }) async throws -> Cluster {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: count, identityShards: identityShards)
        let context = try ZMQContext()
        let box = Mutex<ClusterCoordinator?>(nil)
        let config = try writeServiceConfig(in: directory, usecases: data.useCases, keyMaxAge: keyMaxAge)
        let server = try await TestServer.start(configPath: config) { environment in
            var options = ClusterCoordinator.Options(bind: "tcp://127.0.0.1:0")
            options.replication = replication
            options.heartbeatTimeout = heartbeatTimeout
            options.requestTimeout = .seconds(5)
            options.transferChunkBytes = chunkBytes
            options.faults = faults
            if let curve { options.curve = (curve.0, curve.1) }
            edit(&options)
            let coordinator = try ClusterCoordinator(context: context, options: options, keyStore: environment.keyStore, logger: TestServer.logger)
            box.withLock { $0 = coordinator }
            return coordinator
        }
        let coordinator = try #require(box.withLock { $0 })
        return Cluster(server: server, coordinator: coordinator, context: context, directory: directory, data: data)
    }

    @Test("Queries route to workers; several requests in one call come back in order; a late worker fetches keys on a miss")
    func routingAndKeyFetch() async throws {
        let cluster = try await Self.start(replication: 1)
        let first = try cluster.worker("w1")
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 1))
        let device = cluster.server.device()
        try await device.syncConfig([DemoDataset.block, DemoDataset.identity])  // the key is pushed to w1
        // Several numbers (different shards) in one /queries call: answers in request order.
        let records = Array(cluster.data.records.prefix(6))
        var batch = ProtoRequests()
        for record in records { batch.requests += try await device.queryRequest(Array(record.number.utf8), in: DemoDataset.block).requests }
        let answer = try await device.post("/queries", body: try batch.serializedBytes())
        let responses = try ProtoResponses(serializedBytes: answer)
        #expect(responses.responses.count == records.count)
        for (i, record) in records.enumerated() {
            let single: [UInt8] = try ProtoResponses.with { $0.responses = [responses.responses[i]] }.serializedBytes()
            #expect(try await device.decode(single, keyword: Array(record.number.utf8), in: DemoDataset.block) == [record.block ? 1 : 0])
        }
        // A second worker joins, takes shards over (replication 1: load evens out), and has never seen the key.
        let second = try cluster.worker("w2")
        try await Task.sleep(for: .seconds(1))
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 1))
        first.kill()
        try await Task.sleep(for: .milliseconds(1500))  // w1 declared dead; its shards re-placed on w2
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 1))
        #expect(cluster.coordinator.workers.keys.sorted() == ["w2"])
        for record in records.prefix(3) {
            #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.identity) == (try record.callIdentity()))
        }
        second.stop()
        await cluster.stop()
    }

    @Test("A worker killed under load: every client query still succeeds on the other replica")
    func failover() async throws {
        let cluster = try await Self.start(replication: 2)
        let workers = [try cluster.worker("a"), try cluster.worker("b")]
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 2))
        // A phone whose queries go to the worker about to be killed (its affinity replica), so they are in flight there
        // and must fail over; a phone routed to the survivor would never touch the killed worker.
        let user = try #require((0..<100).map { "failover-phone-\($0)" }.first { KeyAffinity.replica(for: $0, among: ["a", "b"]) == "a" })
        let device = cluster.server.device(userIdentifier: user)
        try await device.syncConfig([DemoDataset.block])
        let records = Array(cluster.data.records.prefix(12))
        let failures = Tally()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, record) in records.enumerated() {
                group.addTask {
                    try await Task.sleep(for: .milliseconds(100 * i))
                    // While the killed worker's queries wait to fail over, this one device can have more than its
                    // share of requests in progress (429 with Retry-After): it waits and retries, as phones do.
                    for attempt in 0..<4 {
                        do {
                            let value = try await device.lookup(Array(record.number.utf8), in: DemoDataset.block)
                            if value != [record.block ? 1 : 0] { failures.add() }
                            return
                        } catch let error as LookupClientError where error.code == .unavailable && error.retryAfter != nil && attempt < 3 {
                            try await Task.sleep(for: .seconds(error.retryAfter ?? 1))
                        } catch {
                            print("failover: lookup \(i) failed: \(error)")
                            failures.add()
                            return
                        }
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(300))
                workers[0].kill()
            }
            try await group.waitForAll()
        }
        #expect(failures.count == 0)
        // Its queries failed over when its connection closed; it is forgotten at the heartbeat timeout (1 s).
        #expect(try await eventually(seconds: 5) { cluster.coordinator.workers.keys.sorted() == ["b"] })
        workers[1].stop()
        await cluster.stop()
    }

    @Test("A worker's connection closes with a query in flight: the query fails over at once, not at the heartbeat timeout")
    func disconnectFailsOver() async throws {
        // Heartbeat and request timeouts far longer than the bound below: only the closed connection can move it.
        let cluster = try await Self.start(replication: 2, heartbeatTimeout: .seconds(20)) { $0.requestTimeout = .seconds(30) }
        let held = ComputePool(width: 1, limits: .init(queryQueue: 8, queueTimeout: .seconds(60)))
        let workers = [try cluster.worker("a", pool: held), try cluster.worker("b")]
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 2))
        let user = try #require((0..<100).map { "disconnect-phone-\($0)" }.first { KeyAffinity.replica(for: $0, among: ["a", "b"]) == "a" })
        let device = cluster.server.device(userIdentifier: user)
        let record = try #require(cluster.data.records.first)
        let number = Array(record.number.utf8)
        #expect(try await device.lookup(number, in: DemoDataset.block) == record.blockValue)  // the key stored

        // a's only compute slot is held, so the phone's next query (a is its replica) stays in flight on a.
        let release = DispatchSemaphore(value: 0)
        let holder = Task { try await held.run { release.wait() } }
        defer { release.signal() }
        #expect(try await eventually { held.snapshot.running[.query] == 1 })
        let query = try await QueryCancelTests.shardQuery(device: device, user: user, number: number)
        let coordinator = cluster.coordinator
        let inFlight = Task { try await coordinator.execute(query) }
        #expect(try await eventually { held.snapshot.queued[.query] == 1 })
        #expect(coordinator.queriesInFlight["a"] == 1)

        let killed = ContinuousClock.now
        workers[0].kill()
        let response = try await inFlight.value
        let waited = ContinuousClock.now - killed
        print("disconnect: the query in flight on the killed worker was answered \(waited) after the kill")
        #expect(waited < .seconds(3), "the query waited \(waited): for the heartbeat or request timeout, not the disconnect")
        let single: [UInt8] = try ProtoResponses.with { $0.responses = [.with { $0.pirResponse = response }] }.serializedBytes()
        #expect(try await device.decode(single, keyword: number, in: DemoDataset.block) == record.blockValue)
        // a keeps its place (a worker that reconnects at once moves no shards) but is routed nothing meanwhile.
        #expect(coordinator.workers.keys.sorted() == ["a", "b"])
        #expect(try await device.lookup(number, in: DemoDataset.block) == record.blockValue)
        #expect(coordinator.queriesInFlight["a"] == 0)
        release.signal()
        try await holder.value
        workers[1].stop()
        await cluster.stop()
    }

    @Test("Placement gauges and /readyz follow the workers: ready while a worker holds every shard, 503 and unserved shards when it dies")
    func readinessFollowsWorkers() async throws {
        let metrics = ServiceMetrics()
        let cluster = try await Self.start(replication: 1, count: 40) { $0.metrics = metrics }
        let worker = try cluster.worker("w1")
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 1))
        #expect(cluster.coordinator.unservedShards == 0)
        #expect(try await cluster.server.admin.send(method: .GET, path: "/readyz", headers: [], body: nil).status == 200)
        let desired = cluster.coordinator.desiredState.shards.count
        worker.kill()
        let deadline = ContinuousClock.now + .seconds(10)
        while cluster.coordinator.unservedShards < desired, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(cluster.coordinator.unservedShards == desired)
        let (status, body) = try await cluster.server.admin.send(method: .GET, path: "/readyz", headers: [], body: nil)
        #expect(status == 503)
        #expect(String(decoding: body, as: UTF8.self).contains("\"unservedShards\":\(desired)"))
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains("callveil_cluster_shards_unserved \(desired)"))
        #expect(exposition.contains("callveil_cluster_shards_desired \(desired)"))
        await cluster.stop()
    }

    @Test("CURVE: a worker with an unlisted key is refused; a listed one serves")
    func unauthorizedWorker() async throws {
        let server = try CurveKeyPair.generate()
        let good = try CurveKeyPair.generate()
        let bad = try CurveKeyPair.generate()
        let metrics = ServiceMetrics()
        let cluster = try await Self.start(replication: 1, curve: (server, [good.publicKey: "trusted"]), count: 40) { $0.metrics = metrics }
        let intruder = try cluster.worker("intruder", keys: bad, serverKey: server.publicKey)
        let trusted = try cluster.worker("trusted", keys: good, serverKey: server.publicKey)
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 1))
        try await Task.sleep(for: .milliseconds(500))
        #expect(cluster.coordinator.workers.keys.sorted() == ["trusted"])
        #expect(cluster.coordinator.refusedConnections >= 1)
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains("# HELP callveil_cluster_handshakes_refused_total"))
        #expect(exposition.split(separator: "\n").contains { $0.hasPrefix("callveil_cluster_handshakes_refused_total ") && !$0.hasSuffix(" 0") })
        let device = cluster.server.device()
        let record = cluster.data.records[0]
        #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == [record.block ? 1 : 0])
        intruder.kill()
        trusted.stop()
        await cluster.stop()
    }

    /// A cluster whose one worker "w" was killed once some chunks of some shard were on disk (512-byte chunks),
    /// and the path of that `.partial` file (nil if none appeared in time).
    static func killedMidTransfer() async throws -> (Cluster, partial: String?) {
        let cluster = try await start(replication: 1, count: 3000, chunkBytes: 512)
        let worker = try cluster.worker("w")
        let partial = try await waitForPartialFile(in: "\(cluster.directory)/worker-w", atLeast: 4096)
        worker.kill()
        return (cluster, partial)
    }

    @Test("A worker killed mid-transfer resumes from its partial file when it comes back")
    func transferResume() async throws {
        let (cluster, partial) = try await Self.killedMidTransfer()
        #expect(partial != nil)
        try await Task.sleep(for: .milliseconds(1500))  // declared dead
        let worker = try cluster.worker("w")
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 1))
        #expect(!worker.resumedTransfers.isEmpty && worker.resumedTransfers.values.allSatisfy { $0 > 0 })
        let device = cluster.server.device()
        #expect(try await device.wrongBlockAnswers(cluster.data.records.prefix(4)) == [])
        worker.stop()
        await cluster.stop()
    }

    @Test("No live replica: 503 with Retry-After")
    func noReplica() async throws {
        let cluster = try await Self.start(replication: 1, count: 40)
        let device = cluster.server.device()
        let record = cluster.data.records[0]
        let request = try await device.queryRequest(Array(record.number.utf8), in: DemoDataset.block)
        let headers = [("User-Identifier", await device.userIdentifier), ("User-Agent", await device.userAgent),
                       ("Authorization", try #require(try await cluster.server.tokens?.authorization()))]
        let answer = try await cluster.server.http.exchange(path: "/queries", headers: headers, body: try request.serializedBytes())
        #expect(answer.status == 503)
        #expect(answer.headers.contains { $0.0.lowercased() == "retry-after" && $0.1 == "1" })
        #expect(String(decoding: answer.body, as: UTF8.self).contains("No replica"))
        await cluster.stop()
    }

    @Test("Phones retry a 503 after its Retry-After: no replica at first, a worker joins, every lookup then succeeds")
    func loadGeneratorRetries() async throws {
        let cluster = try await Self.start(replication: 1, count: 40)
        let truth = try LoadGenerator.Truth(records: cluster.data.records, absent: [DemoDataset.absentNumber])
        // No worker yet: every query is a 503 with Retry-After; the worker starts while the phones wait to retry.
        let late = Task {
            try await Task.sleep(for: .milliseconds(1500))
            return try cluster.worker("w1")
        }
        let generator = LoadGenerator(url: cluster.server.url, blockUseCase: DemoDataset.block, identityUseCase: DemoDataset.identity,
                                      phones: 2, userToken: "AAAA", retry: .init(retries: 30, maxWaitSeconds: 1))
        let result = try await generator.run(mode: .closed, duration: .seconds(1), truth: truth)
        #expect(result.unavailable >= 2 && result.retriedSucceeded >= 2)
        #expect(result.errors == 0 && result.mismatches == 0 && result.unavailableWithoutRetryAfter == 0 && result.lookups > 0)
        // Without retries the same 503 is an error.
        let worker = try await late.value
        worker.stop()
        let gone = ContinuousClock.now + .seconds(10)
        while !cluster.coordinator.workers.isEmpty, ContinuousClock.now < gone { try await Task.sleep(for: .milliseconds(50)) }
        #expect(cluster.coordinator.workers.isEmpty)
        let strict = try await LoadGenerator(url: cluster.server.url, blockUseCase: DemoDataset.block, identityUseCase: DemoDataset.identity,
                                             phones: 1, userToken: "AAAA").run(mode: .closed, duration: .milliseconds(200), truth: truth)
        #expect(strict.errors >= 1 && strict.unavailable >= 1 && strict.retriedSucceeded == 0)
        await cluster.stop()
    }

    @Test("Shard transfer: one shard format (the version-2 file as it is, or a database packed back into one), resume after an interruption, corrupted chunks rejected")
    func transfer() throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 200)
        let loaded = try UseCaseLoader.load(data.useCases[1])
        let context = loaded.version.context
        let database = try loaded.shards[0].load()
        // The file on disk travels as it is; a database held only in evaluation form packs back into the same file.
        let file = try #require(try loaded.shards[0].loadFile(), "a version-2 shard file is sent as it is")
        let contents = try ShardFile.deserialize(file, context: context)
        #expect(try ShardFile.serialize(database, parameterBlob: contents.parameterBlob, context: context) == file)
        let rebuilt = try ProcessedDatabase(parameters: database.parameters, tables: contents.tables, context: context)
        #expect(rebuilt.serializeReferenceFormat() == database.serializeReferenceFormat())
        #expect(file.count < database.serializeReferenceFormat().count / 5 + 2 * 4096, "payloads, plus at most two pages of header and padding")
        let compact = file

        let source = TransferSource(bytes: compact, chunkSize: 256)
        let ref = ShardKey(useCase: "u", configID: [1, 2], shard: 0).ref
        let path = "\(directory)/recv/shard.cvshard"
        var sink = try TransferSink(path: path, totalBytes: compact.count, sha256: source.sha256)
        // Half the chunks, then the "connection breaks": a new sink resumes from the file.
        while sink.offset < compact.count / 2 { _ = try sink.accept(try source.chunk(for: ref, at: sink.offset)) }
        let resumeAt = sink.offset
        sink = try TransferSink(path: path, totalBytes: compact.count, sha256: source.sha256)
        #expect(sink.offset == resumeAt && resumeAt > 0)
        // A corrupted chunk (payload or checksum) is rejected and changes nothing.
        var corrupt = try source.chunk(for: ref, at: sink.offset)
        var frame = [UInt8](corrupt.lz4Frame)
        frame[frame.count / 2] ^= 0xff
        corrupt.lz4Frame = Data(frame)
        #expect(throws: (any Error).self) { try sink.accept(corrupt) }
        var wrongSum = try source.chunk(for: ref, at: sink.offset)
        wrongSum.sha256 = Data(repeating: 0, count: 32)
        #expect(throws: ClusterError.self) { try sink.accept(wrongSum) }
        #expect(throws: ClusterError.self) { try sink.accept(try source.chunk(for: ref, at: 0)) }  // wrong offset
        #expect(sink.offset == resumeAt)
        var done = false
        while !done { done = try sink.accept(try source.chunk(for: ref, at: sink.offset)) }
        #expect(try sink.finish() == compact)

        // Spooled: the same chunks, read from the file; a crash's leftovers (a partial write, a file cut short) are
        // replaced, and a prune keeps only the content still wanted.
        let spool = "\(directory)/spool"
        let spooled = try TransferSource.spooled(compact, in: spool, chunkSize: 256)
        let spoolFile = TransferSource.spoolPath(sha256: source.sha256, in: spool)
        #expect(spooled.sha256 == source.sha256 && spooled.totalBytes == compact.count)
        for offset in stride(from: 0, to: compact.count, by: 256) {
            #expect(try spooled.chunk(for: ref, at: offset) == (try source.chunk(for: ref, at: offset)))
        }
        #expect(throws: ClusterError.self) { try spooled.chunk(for: ref, at: compact.count) }
        try Data(compact.prefix(1000)).write(to: URL(fileURLWithPath: spoolFile))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: spoolFile + ".partial"))
        try Data([4]).write(to: URL(fileURLWithPath: "\(spool)/\(String(repeating: "ab", count: 32)).cvshard"))
        _ = try TransferSource.spooled(compact, in: spool, chunkSize: 256)
        #expect(FileManager.default.contents(atPath: spoolFile) == Data(compact), "a file of the wrong size is written again")
        #expect(TransferSource.pruneSpool(spool, keeping: [source.sha256]) == 2, "the unwanted file and the crash's temporary")
        #expect(try FileManager.default.contentsOfDirectory(atPath: spool) == [URL(fileURLWithPath: spoolFile).lastPathComponent])
        // The spooled file gone (an operator's mistake): a chunk is a typed error, not a crash.
        #expect(TransferSource.pruneSpool(spool, keeping: []) == 1)
        #expect(throws: ClusterError.self) { try spooled.chunk(for: ref, at: 0) }
    }

    @Test("Placement: replicas on distinct workers, even load, re-replication after a loss")
    func placement() {
        let shards = Array(0..<6)
        let two = ShardPlacement.plan(shards: shards, workers: ["a", "b"], current: [:], replication: 2)
        #expect(shards.allSatisfy { two[$0] == ["a", "b"] })
        let three = ShardPlacement.plan(shards: shards, workers: ["a", "b", "c"], current: two, replication: 2)
        let loads = ["a", "b", "c"].map { w in shards.filter { three[$0]!.contains(w) }.count }
        #expect(loads == [4, 4, 4] && shards.allSatisfy { three[$0]!.count == 2 })
        let afterLoss = ShardPlacement.plan(shards: shards, workers: ["b", "c"], current: three, replication: 2)
        #expect(shards.allSatisfy { afterLoss[$0] == ["b", "c"] })
        let single = ShardPlacement.plan(shards: shards, workers: ["a", "b", "c"], current: [:], replication: 1)
        #expect(["a", "b", "c"].map { w in shards.filter { single[$0]!.contains(w) }.count } == [2, 2, 2])
    }
}

