import Dispatch
import Foundation
import LookupCoordinator
import LookupEngine
import LookupService
import ServiceTestSupport
import Synchronization
import Testing

/// The coordinator's line for credit is fair across User-Identifiers: one user's backlog does not make another's
/// query wait behind all of it, and a full line makes room for a newcomer by refusing the backlog's newest.
@Suite("Credit line", .serialized)
struct CreditLineTests {
    @Test("A phone's query waiting behind a flood's is served after one of them, not all; a full line pushes out the flood's newest")
    func fairLine() async throws {
        // The line's 2 s deadline would shed the waiters when the parallel suite slows each query down: this test is
        // about the order, so the deadline is out of the way.
        let cluster = try await ClusterTests.start(replication: 1) {
            $0.maxWaitingQueries = 3
            $0.queueTimeout = .seconds(60)
        }
        let pool = ComputePool(width: 1, limits: .init(queryQueue: 8, queueTimeout: .seconds(30)))
        let worker = try cluster.worker("w1", pool: pool, credit: 1)
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 1))
        let record = try #require(cluster.data.records.first)
        let number = Array(record.number.utf8)
        var queries: [String: ShardQuery] = [:]
        for user in ["flood", "phone"] {
            let device = cluster.server.device(userIdentifier: user)
            #expect(try await device.lookup(number, in: DemoDataset.block) == record.blockValue)  // key stored and parsed
            queries[user] = try await QueryCancelTests.shardQuery(device: device, user: user, number: number)
        }
        let flood = try #require(queries["flood"]), phone = try #require(queries["phone"])

        // The worker's one slot held; the flood takes its one credit and fills the line of three.
        let release = DispatchSemaphore(value: 0)
        let holder = Task { try await pool.run { release.wait() } }
        // The slot must be held before the flood's first query reaches the worker, or that query is answered at once.
        #expect(try await eventually { pool.snapshot.running[.query] == 1 })
        let coordinator = cluster.coordinator
        let order = Completions()
        func submit(_ name: String, _ query: ShardQuery) -> Task<Bool, Never> {
            Task {
                do {
                    _ = try await coordinator.execute(query)
                    order.add(name)
                    return true
                } catch {
                    return false
                }
            }
        }
        var floodTasks = [submit("flood-0", flood)]
        #expect(try await eventually { coordinator.queriesInFlight["w1"] == 1 })
        #expect(try await eventually { pool.snapshot.queued[.query] == 1 })
        for i in 1...3 {
            floodTasks.append(submit("flood-\(i)", flood))
            #expect(try await eventually { coordinator.queriesWaiting == i })
        }
        // The phone arrives at a full line: the flood's newest waiter is refused to make room.
        let phoneTask = submit("phone", phone)
        let pushedOut = await floodTasks[3].value
        #expect(!pushedOut, "the flood's newest waiter was not pushed out")
        #expect(coordinator.queriesWaiting == 3)

        release.signal()
        try await holder.value
        #expect(await phoneTask.value)
        for task in floodTasks.prefix(3) { #expect(await task.value) }
        // Served: the flood's query holding the credit, then turn 1 (the flood's first waiter, which came first,
        // and the phone's), then the flood's turn 2: not the flood's whole backlog before the phone.
        #expect(order.names == ["flood-0", "flood-1", "phone", "flood-2"])
        worker.stop()
        await cluster.stop()
    }

    /// Names in the order their queries were answered.
    final class Completions: Sendable {
        private let value = Mutex<[String]>([])
        func add(_ name: String) { value.withLock { $0.append(name) } }
        var names: [String] { value.withLock { $0 } }
    }
}
