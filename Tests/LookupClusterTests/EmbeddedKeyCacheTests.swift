import Foundation
import LookupCoordinator
import LookupDeployment
import LookupService
import ServiceTestSupport
import Testing

/// The parsed-key cache of `callveil serve`'s embedded workers is the service's, sized by `keys.cacheMegabytes`, so
/// that an operator (or a population benchmark) can bound it; it was a fixed 512 MiB per worker whatever the config.
/// The coordinator pushes them no keys: the upload has put each key in that cache already.
@Suite("Embedded workers' key cache")
struct EmbeddedKeyCacheTests {
    /// Key-cache lookups by result, from the service's metrics.
    static func lookups(_ exposition: String, _ result: String) -> Int {
        Int(metricValue(exposition, "callveil_key_cache_lookups_total{result=\"\(result)\"}"))
    }

    @Test("keys.cacheMegabytes bounds the embedded workers' cache: at 0 every lookup parses the key again, by default every lookup hits",
          arguments: [0, nil] as [Int?])
    func cacheFollowsConfig(megabytes: Int?) async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 60)
        let cluster = try EmbeddedCluster()
        let config = try writeServiceConfig(in: directory, usecases: data.useCases) { $0.keys?.cacheMegabytes = megabytes }
        let server = try await TestServer.start(configPath: config, makeExecutor: cluster.makeExecutor(logger: TestServer.logger))
        let workers = try await cluster.startWorkers(count: 1, dataDirectory: "\(directory)/embedded", threads: 1, server: server.server,
                                                     logger: TestServer.logger)
        let device = server.device()
        let records = Array(data.records.prefix(3))
        for record in records {
            #expect(try await device.lookup(Array(record.number.utf8), in: DemoDataset.block) == record.blockValue)
        }
        let metrics = String(decoding: server.server.metrics.exposition(), as: UTF8.self)
        let (hits, misses) = (Self.lookups(metrics, "hit"), Self.lookups(metrics, "miss"))
        print("key cache \(megabytes.map { "\($0) MiB" } ?? "default"): \(hits) hits, \(misses) misses over \(records.count) lookups")
        if megabytes == 0 {
            #expect(hits == 0 && misses >= records.count)
            // Each miss's read and parse are stages of their own, so a trace tells a slow store from a busy core.
            for stage in ["key_fetch", "key_parse"] {
                #expect(stageCount(metrics, stage) == misses)
            }
        } else {
            #expect(hits == records.count && misses == 0)  // the key is parsed when it is uploaded
        }
        // The upload put the key in the cache the workers read: nothing is pushed through the socket to them.
        #expect((server.server.executor as? ClusterCoordinator)?.keyPushes == 0)
        for worker in workers { worker.stop() }
        await server.stop()
        (server.server.executor as? ClusterCoordinator)?.shutdown()
    }
}
