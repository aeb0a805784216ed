import ArgumentParser
import Foundation
import Hummingbird
import Logging
import PIR
import LookupCoordinator
import LookupDeployment
import LookupService
import LookupWorker
import ServiceCore
import ServiceLifecycle

/// The service the bench starts: an embedded coordinator with `workers` workers over inproc (0: in-process
/// executor), Privacy Pass on (unless told otherwise), on an ephemeral loopback port.
struct BenchServer {
    let url: String
    let server: LookupServer
    let group: ServiceGroup
    let task: Task<Void, any Error>
    let workers: [ClusterWorker]
    let coordinator: ClusterCoordinator?

    static func start(dataset: BenchDataset, workers: Int, keyCacheMegabytes: Int? = nil, privacyPass: Bool = true,
                      logger: Logger) async throws -> BenchServer {
        let directory = "\(dataset.directory)/server-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var config = ServiceConfig(users: [.init(tier: "tier1", tokens: ["AAAA"])],
                                   usecases: [.init(name: BenchDataset.block, fileStem: "\(dataset.directory)/block/shard"),
                                              .init(name: BenchDataset.identity, fileStem: "\(dataset.directory)/identity/shard")],
                                   keys: .init(database: "\(directory)/keys.sqlite", cacheMegabytes: keyCacheMegabytes),
                                   privacyPass: .init(enabled: privacyPass, keyDirectory: "\(directory)/issuer-keys",
                                                      nonceDatabase: "\(directory)/nonces.sqlite"))
        config.http = .init(adminPort: 0)
        let configPath = "\(directory)/service-config.json"
        try JSONEncoder().encode(config).write(to: URL(fileURLWithPath: configPath))
        let cluster = try EmbeddedCluster()
        let (server, embedded) = try await cluster.startServer(configPath: configPath, workers: workers,
                                                               threads: max(MulPirServer.coreCount / max(workers, 1), 1),
                                                               dataDirectory: directory, logger: logger)
        let coordinator = server.executor as? ClusterCoordinator
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try server.makeApplication(host: "127.0.0.1", port: 0, onServerRunning: { port in continuation.yield(port) })
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CleanExit.message("the server did not start") }
        return BenchServer(url: "http://127.0.0.1:\(port)", server: server, group: group, task: task, workers: embedded,
                           coordinator: coordinator)
    }

    /// The parsed-key cache's hits and misses so far and the time spent fetching and parsing missed keys (from the
    /// server's metrics: `callveil_key_cache_lookups_total`, the `key_fetch` and `key_parse` stages).
    func keyCache() -> (hits: Int, misses: Int, fetchSeconds: Double) {
        let samples = metricSamples()
        return (Int(samples("callveil_key_cache_lookups_total{result=\"hit\"} ")), Int(samples("callveil_key_cache_lookups_total{result=\"miss\"} ")),
                samples("callveil_lookup_stage_seconds_sum{stage=\"key_fetch\"} ") + samples("callveil_lookup_stage_seconds_sum{stage=\"key_parse\"} "))
    }

    /// Sum of the server's PIR compute time so far (from its metrics).
    func pirComputeSeconds() -> Double {
        metricSamples()("callveil_pir_compute_seconds_sum")
    }

    /// The server's metrics now, as a function from a series prefix to the sum of the samples that start with it.
    private func metricSamples() -> (String) -> Double {
        let lines = String(decoding: server.metrics.exposition(), as: UTF8.self).split(separator: "\n")
        return { prefix in
            lines.filter { $0.hasPrefix(prefix) }.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
        }
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        for worker in workers { worker.stop() }
        coordinator?.shutdown()
    }
}
