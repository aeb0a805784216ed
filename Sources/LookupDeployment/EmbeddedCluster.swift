import Foundation
import Logging
import Tracing
import LookupEngine
import LookupCoordinator
import LookupService
import LookupStorage
import LookupWorker
import ZeroMQ

/// A coordinator and its workers in one process over `inproc://` (`callveil serve --workers N`, the bench): the
/// cluster's code path without the network. The workers share the service's compute pool, key store,
/// parsed-key cache (`keys.cacheMegabytes`) and metrics.
public struct EmbeddedCluster: Sendable {
    /// The in-process endpoint.
    public static let endpoint = "inproc://callveil-embedded"
    /// The shared ZeroMQ context (inproc needs one context).
    public let context: ZMQContext
    /// The metrics the service and the cluster record into (and their spans, when tracing is on).
    public let metrics: ServiceMetrics

    /// A new embedded cluster, tracing into `tracer` when given.
    public init(tracer: (any Tracer)? = nil) throws {
        context = try ZMQContext()
        metrics = ServiceMetrics(tracer: tracer)
    }

    /// The executor factory for `LookupServer`: a coordinator bound to the in-process endpoint, one copy per shard,
    /// keeping the shard files its workers fetch in `spoolDirectory` (nil: in memory).
    public func makeExecutor(logger: Logger, spoolDirectory: String? = nil) -> @Sendable (ExecutorEnvironment) throws -> any ShardExecutor {
        { [context, metrics] environment in
            var options = ClusterCoordinator.Options(bind: Self.endpoint)
            options.replication = 1
            options.metrics = metrics
            options.spoolDirectory = spoolDirectory
            options.pushesKeys = false  // the workers read the service's key cache, where the upload put the key
            return try ClusterCoordinator(context: context, options: options, keyStore: environment.keyStore, logger: logger)
        }
    }

    /// Starts `count` workers (`threads` each; nil: every core) sharing the service's pool and metrics, then waits
    /// until the cluster has converged (every shard loaded, even load).
    public func startWorkers(count: Int, dataDirectory: String, threads: Int?, server: LookupServer,
                             logger: Logger) async throws -> [ClusterWorker] {
        let workers = try (0..<count).map { i in
            var options = ClusterWorker.Options(coordinator: Self.endpoint, dataDirectory: "\(dataDirectory)/\(i)", workerID: "embedded-\(i)")
            options.threads = threads
            options.metrics = server.metrics
            options.pool = server.pool
            options.keyCache = server.keyCache
            options.keyReader = server.keyStore  // a miss reads the store here, not through the coordinator's socket
            return try ClusterWorker(context: context, options: options, logger: logger)
        }
        if let coordinator = server.executor as? ClusterCoordinator,
           !(await coordinator.waitUntilBalanced(workerCount: count, timeout: .seconds(600))) {
            logger.warning("not every shard is loaded on a worker yet; queries for it answer 503 until it is")
        }
        return workers
    }

    /// Starts a service from `configPath` with `workers` embedded workers (0: the PIR core in the HTTP process); the
    /// workers' shard copies and the coordinator's spool go under `dataDirectory`.
    public func startServer(configPath: String, workers: Int, threads: Int?, dataDirectory: String,
                            logger: Logger) async throws -> (LookupServer, [ClusterWorker]) {
        let executor = workers == 0 ? nil : makeExecutor(logger: logger, spoolDirectory: "\(dataDirectory)/spool")
        let server = try await LookupServer(configPath: configPath, pool: nil, metrics: metrics, makeExecutor: executor, logger: logger)
        let started = try await startWorkers(count: workers, dataDirectory: dataDirectory, threads: threads, server: server, logger: logger)
        return (server, started)
    }
}
