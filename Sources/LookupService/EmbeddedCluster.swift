import Foundation
import Logging
import ZeroMQ

/// A coordinator and its workers in one process over `inproc://` (`callveil serve --workers N`, the bench): the
/// cluster's code path without the network.
public struct EmbeddedCluster: Sendable {
    /// The in-process endpoint.
    public static let endpoint = "inproc://callveil-embedded"
    /// The shared ZeroMQ context (inproc needs one context).
    public let context: ZMQContext

    /// A new embedded cluster.
    public init() throws {
        context = try ZMQContext()
    }

    /// The executor factory for `LookupServer`: a coordinator bound to the in-process endpoint, one copy per shard.
    public func makeExecutor(logger: Logger) -> @Sendable (any EvaluationKeyStore) throws -> any ShardExecutor {
        { [context] store in
            var options = ClusterCoordinator.Options(bind: Self.endpoint)
            options.replication = 1
            return try ClusterCoordinator(context: context, options: options, keyStore: store, logger: logger)
        }
    }

    /// Starts `count` workers (`threads` each; nil: every core) sharing the service's metrics, then waits until
    /// every shard is loaded and the load is even across them.
    public func startWorkers(count: Int, dataDirectory: String, threads: Int?, server: LookupServer,
                             logger: Logger) async throws -> [ClusterWorker] {
        let workers = try (0..<count).map { i in
            var options = ClusterWorker.Options(coordinator: Self.endpoint, dataDirectory: "\(dataDirectory)/\(i)", workerID: "embedded-\(i)")
            options.threads = threads
            options.metrics = server.metrics
            return try ClusterWorker(context: context, options: options, logger: logger)
        }
        if let coordinator = server.executor as? ClusterCoordinator,
           !(await coordinator.waitUntilBalanced(workerCount: count, timeout: .seconds(600))) {
            logger.warning("not every shard is loaded on a worker yet; queries for it answer 503 until it is")
        }
        return workers
    }
}
