import ClusterTransport
import Dispatch
import Foundation
import LookupClient
import LookupCoordinator
import LookupEngine
import LookupProtocol
import LookupService
import ServiceTestSupport
import Testing

/// A query whose client goes away stops everywhere: in the coordinator's line for credit, and on the worker
/// (`QueryCancel`), where it is dropped before it computes; the worker's credit comes back only when the worker
/// has answered, so a worker is never sent more than it accepts.
@Suite("Query cancel", .serialized)
struct QueryCancelTests {
    @Test("Cancelled queries leave the line and the worker's queue uncomputed; credit returns after the worker answers")
    func cancelledQueries() async throws {
        // One worker must stay routable throughout, on a loaded machine too: this test is about cancelling, not
        // about noticing a silent worker.
        let cluster = try await ClusterTests.start(replication: 1, heartbeatTimeout: .seconds(10))
        let pool = ComputePool(width: 1, limits: .init(queryQueue: 8, queueTimeout: .seconds(30)))
        let worker = try cluster.worker("w1", pool: pool, credit: 2)
        #expect(await cluster.coordinator.waitUntilPlaced(copies: 1))
        let user = UUID().uuidString
        let device = cluster.server.device(userIdentifier: user)
        let record = try #require(cluster.data.records.first)
        let number = Array(record.number.utf8)
        #expect(try await device.lookup(number, in: DemoDataset.block) == record.blockValue)  // key stored and parsed
        let query = try await Self.shardQuery(device: device, user: user, number: number)

        // The worker's only compute slot is held; two queries fill its credit (queued in its pool), a third waits
        // in the coordinator's line.
        let release = DispatchSemaphore(value: 0)
        let holder = Task { try await pool.run { release.wait() } }
        #expect(try await eventually { pool.snapshot.running[.query] == 1 })
        let coordinator = cluster.coordinator
        let first = Task { try await coordinator.execute(query) }
        #expect(try await eventually { pool.snapshot.queued[.query] == 1 })
        let second = Task { try await coordinator.execute(query) }
        #expect(try await eventually { pool.snapshot.queued[.query] == 2 })
        let third = Task { try await coordinator.execute(query) }
        #expect(try await eventually { coordinator.queriesWaiting == 1 })
        #expect(coordinator.queriesInFlight["w1"] == 2)

        third.cancel()
        second.cancel()
        await #expect(throws: CancellationError.self) { try await third.value }
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(coordinator.queriesWaiting == 0)
        #expect(coordinator.queriesInFlight["w1"] == 2, "the abandoned query's credit is held until the worker answers")

        let cancelledBefore = pool.snapshot.cancelled
        release.signal()
        try await holder.value
        let response = try await first.value
        let single: [UInt8] = try ProtoResponses.with { $0.responses = [.with { $0.pirResponse = response }] }.serializedBytes()
        #expect(try await device.decode(single, keyword: number, in: DemoDataset.block) == record.blockValue)
        #expect(try await eventually { coordinator.queriesInFlight["w1"] == 0 })
        #expect(pool.snapshot.cancelled == cancelledBefore + 1, "the cancelled query was computed on the worker")
        #expect(try await device.lookup(number, in: DemoDataset.block) == record.blockValue)
        worker.stop()
        await cluster.stop()
    }

    /// The shard query the service would route for `number` (its key stored under `user`).
    static func shardQuery(device: LookupDevice, user: String, number: [UInt8]) async throws -> ShardQuery {
        let request = try #require(try await device.queryRequest(number, in: DemoDataset.block).requests.first)
        let pir = request.pirRequest
        return ShardQuery(useCase: request.usecase, configID: [UInt8](pir.configurationHash), shardIndex: Int(pir.shardIndex),
                          query: pir.query,
                          key: .stored(user: user, identifier: [UInt8](pir.evaluationKeyMetadata.identifier),
                                       timestamp: pir.evaluationKeyMetadata.timestamp))
    }
}
