import ClusterTransport
import Dataset
import Foundation
import LookupClient
import LookupCoordinator
import LookupEngine
import LookupProtocol
import LookupService
import LookupStorage
import LookupWorker
import PostgresNIO
import ServiceTestSupport
import Synchronization
import Testing
import ZeroMQ

/// Two coordinators on one PostgreSQL with two workers connected to both: one leads placement, the other follows
/// the stored placement, either answers every query, and the survivor takes over when the leader goes.
@Suite("Two coordinators on one PostgreSQL")
struct SharedCoordinatorTests {
    struct Front {
        let server: TestServer
        let coordinator: ClusterCoordinator
    }

    static func front(_ config: String, name: String, context: ZMQContext) async throws -> Front {
        let box = Mutex<ClusterCoordinator?>(nil)
        let server = try await TestServer.start(configPath: config) { environment in
            guard let shared = environment.sharedStore else { throw ConfigError("the test config names no shared store") }
            var options = ClusterCoordinator.Options(bind: "tcp://127.0.0.1:0")
            options.replication = 2
            options.heartbeatTimeout = .seconds(3)  // the default: under the parallel suite a 1 s timeout drops live workers
            options.requestTimeout = .seconds(5)
            options.desiredStore = PostgresDesiredStateStore(store: shared, holder: name, checkInterval: .milliseconds(250),
                                                             logger: TestServer.logger)
            let coordinator = try ClusterCoordinator(context: context, options: options, keyStore: environment.keyStore, logger: TestServer.logger)
            box.withLock { $0 = coordinator }
            return coordinator
        }
        return Front(server: server, coordinator: try #require(box.withLock { $0 }))
    }

    /// Workers (one thread each, a data directory each) connected to every one of `fronts`; `metrics[i]`, when
    /// given, records worker i's counters.
    static func workers(_ ids: [String], of fronts: [Front], context: ZMQContext, metrics: [ServiceMetrics]? = nil) throws -> [ClusterWorker] {
        let directory = try temporaryDirectory()
        return try ids.enumerated().map { index, id in
            var options = ClusterWorker.Options(coordinators: fronts.map(\.coordinator.endpoint), dataDirectory: "\(directory)/\(id)",
                                                workerID: id)
            options.threads = 1
            options.metrics = metrics?[index]
            return try ClusterWorker(context: context, options: options, logger: TestServer.logger)
        }
    }

    /// Stops the workers, then the coordinators and their HTTP servers.
    static func stop(_ workers: [ClusterWorker], _ fronts: [Front]) async {
        for worker in workers { worker.stop() }
        for front in fronts {
            await front.server.stop()
            await front.coordinator.stop()
        }
    }

    @Test("One leader, one follower; a key uploaded at A answers at B; the leader stops under load and B takes over within 10 s without a failed query or a moved shard; A returns as a follower")
    func leaderAndFollower() async throws {
        let (configs, data, _) = try await sharedStoreServices(count: 2, privacyPass: false, records: 60)
        let context = try ZMQContext()
        let a = try await Self.front(configs[0], name: "coordinator-a", context: context)
        let b = try await Self.front(configs[1], name: "coordinator-b", context: context)
        #expect(try await timeUntil(within: .seconds(10)) { [a, b].filter { $0.coordinator.leadsPlacement }.count == 1 } != nil)
        let workers = try Self.workers(["w1", "w2"], of: [a, b], context: context)
        let (leader, follower) = a.coordinator.leadsPlacement ? (a, b) : (b, a)
        #expect(await leader.coordinator.waitUntilBalanced(workerCount: 2, timeout: .seconds(60)))
        // The follower adopts the stored placement and plans nothing of its own.
        #expect(try await timeUntil(within: .seconds(5)) {
            let placed = leader.coordinator.desiredState.placement
            return !placed.isEmpty && follower.coordinator.desiredState.placement == placed
        } != nil)
        #expect(!follower.coordinator.leadsPlacement)
        #expect(follower.coordinator.workers.count == 2)
        let transfersBefore = workers.map(\.transfersStarted)
        let placementBefore = leader.coordinator.desiredState.placement

        // A key uploaded through the leader answers queries through the follower (pushed or fetched on a miss).
        let device = leader.server.device(userIdentifier: "shared-coordinator-user")
        let blocked = try #require(data.records.first { $0.block })
        #expect(try await device.lookup(Array(blocked.number.utf8), in: DemoDataset.block) == blocked.blockValue)
        let headers = [("User-Identifier", "shared-coordinator-user"), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 test")]
        func lookThroughFollower(_ record: IdentityRecord) async throws -> Bool {
            let keyword = Array(record.number.utf8)
            let request = try await device.queryRequest(keyword, in: DemoDataset.block)
            let answer = try await follower.server.post("/queries", body: try request.serializedBytes(), headers: headers)
            guard answer.status == 200 else { return false }
            return try await device.decode(answer.body, keyword: keyword, in: DemoDataset.block) == record.blockValue
        }
        for record in data.records.prefix(4) { #expect(try await lookThroughFollower(record)) }

        // Under load through the follower, the leader stops: the follower takes over within 10 s, and no query
        // through it fails or answers wrong.
        let good = Tally(), bad = Tally(), done = Mutex(false)
        let load = Task {
            var index = 0
            while !done.withLock({ $0 }) {  // not cancellation: that would fail the lookup in flight
                let record = data.records[index % data.records.count]
                if (try? await lookThroughFollower(record)) == true { good.add() } else { bad.add() }
                index += 1
            }
        }
        try await Task.sleep(for: .seconds(1))
        await leader.server.stop()
        await leader.coordinator.stop()
        let takeover = try await timeUntil(within: .seconds(10)) { follower.coordinator.leadsPlacement }
        #expect(takeover != nil, "the follower did not take over within 10 s")
        try await Task.sleep(for: .seconds(2))
        done.withLock { $0 = true }
        _ = await load.value
        print("takeover after \(takeover.map { "\($0)" } ?? "never"); \(good.count) lookups through the survivor, \(bad.count) failed or wrong")
        #expect(bad.count == 0)
        #expect(good.count > 0)
        // Nothing moved: the new leader planned from the stored placement.
        #expect(follower.coordinator.desiredState.placement == placementBefore)
        #expect(workers.map(\.transfersStarted) == transfersBefore)

        // The old leader comes back and follows.
        let back = try await Self.front(leader.coordinator === a.coordinator ? configs[0] : configs[1], name: "coordinator-returned",
                                        context: context)
        #expect(try await timeUntil(within: .seconds(5)) { back.coordinator.desiredState.placement == placementBefore } != nil)
        #expect(!back.coordinator.leadsPlacement && follower.coordinator.leadsPlacement)

        await Self.stop(workers, [back, follower])
    }

    @Test("A key uploaded at A and expired is refused by both coordinators and dropped by the worker that parsed it (its metrics say so)")
    func expiryAcrossCoordinators() async throws {
        let (configs, data, _) = try await sharedStoreServices(count: 2, privacyPass: false, keyMaxAge: 4)
        let context = try ZMQContext()
        let a = try await Self.front(configs[0], name: "coordinator-a", context: context)
        let b = try await Self.front(configs[1], name: "coordinator-b", context: context)
        let metrics = [ServiceMetrics(), ServiceMetrics()]
        let workers = try Self.workers(["w1", "w2"], of: [a, b], context: context, metrics: metrics)
        #expect(try await timeUntil(within: .seconds(60)) {
            [a, b].contains { $0.coordinator.leadsPlacement && $0.coordinator.isConverged }
                && [a, b].allSatisfy { $0.coordinator.workers.count == 2 }
        } != nil)
        // Uploaded through A (each worker serves both use cases with replication 2: the key is pushed to the phone's
        // affinity replica, and its queries go there).
        let device = a.server.device(userIdentifier: "expiring-user")
        let record = data.records[3]
        #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == record.blockValue)
        let stale = try await device.queryRequest(Array(data.records[4].number.utf8), in: DemoDataset.block)
        #expect(try await timeUntil(within: .seconds(3)) { workers.map(\.keyCounts.held).reduce(0, +) == 1 } != nil)
        let holder = try #require(workers.firstIndex { $0.keyCounts.held == 1 })
        func expiredOnWorker(_ index: Int) -> Int {
            let text = String(decoding: metrics[index].exposition(), as: UTF8.self)
            let line = text.split(separator: "\n").first { $0.hasPrefix("callveil_worker_keys_expired_total") }
            return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        }
        #expect(expiredOnWorker(0) == 0 && expiredOnWorker(1) == 0)
        // Past the maximum age (and the coordinators' slack), the worker drops it, whichever coordinator's KeyExpiry
        // arrives first; the other never parsed it.
        #expect(try await timeUntil(within: .seconds(12)) { expiredOnWorker(holder) == 1 } != nil)
        #expect(expiredOnWorker(1 - holder) == 0)
        #expect(workers.allSatisfy { $0.keyCounts.held == 0 })
        let headers = [("User-Identifier", "expiring-user"), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 test")]
        for front in [a, b] {
            let refused = try await front.server.post("/queries", body: try stale.serializedBytes(), headers: headers)
            #expect(refused.status == 400)
            #expect(String(decoding: refused.body, as: UTF8.self).contains("Evaluation key not found"))
        }
        await Self.stop(workers, [a, b])
    }

    @Test("A leader whose term was taken over is refused by the database (fenced), and claims again when it still holds the lock; an older generation never replaces a newer one")
    func fencing() async throws {
        let store = try await TestPostgres.store()
        // Checks every second: a lease of 3 s survives the parallel suite's stalls (a lease that lapses is a loss of
        // the lead, by design).
        let first = PostgresDesiredStateStore(store: store, holder: "first", logger: TestServer.logger)
        let second = PostgresDesiredStateStore(store: store, holder: "second", logger: TestServer.logger)
        var leads: [Bool] = []
        for _ in 0..<100 {
            leads = [await first.leads(), await second.leads()]
            if leads.contains(true) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(leads.filter { $0 }.count == 1)
        let (leader, other) = leads[0] ? (first, second) : (second, first)
        var state = DesiredState()
        let key = ShardKey(useCase: "fence", configID: [1, 2], shard: 0)
        state.shards[key] = ShardSpec(key: key, sha256: Array(repeating: 7, count: 32), totalBytes: 10, parameters: [1],
                                      keyConfigHash: [2], shardCount: 1)
        state.placement[key] = ["w1"]
        state.generation = 3
        try await leader.save(state)
        #expect(try await other.load() == state)
        // The follower may not write at all.
        await #expect(throws: StoreError.self) { try await other.save(state) }
        // Another process claims the next term behind the leader's back (as a new leader would after a stall).
        let term = try await store.run("test") { client in
            let rows = try await client.query("UPDATE cluster_leadership SET term = term + 1 RETURNING term", logger: TestServer.logger)
            for try await term in rows.decode(Int64.self) { return term }
            return Int64(0)
        }
        #expect(term >= 2)
        state.generation = 4
        do {
            try await leader.save(state)
            Issue.record("a write under an outdated term was accepted")
        } catch let error as StoreError {
            #expect(error.code == .fenced)
        }
        #expect(try await other.load()?.generation == 3)
        // Still holding the lock, it claims a new term and may write again.
        var again = false
        for _ in 0..<100 where !again {
            again = await leader.leads()
            if !again { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(again)
        try await leader.save(state)
        #expect(try await other.load()?.generation == 4)
        // Within a term, a write of an older generation (writes may arrive out of order) leaves the newer one.
        var older = state
        older.generation = 2
        older.placement[key] = ["w9"]
        try await leader.save(older)
        #expect(try await other.load() == state)
        await first.stop()
        await second.stop()
        await store.shutdown()
    }
}
