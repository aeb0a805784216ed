import ArgumentParser
import Foundation
import Hummingbird
import Logging
import LookupCoordinator
import LookupEngine
import LookupService
import ZeroMQ

/// `callveil coordinator`: the HTTP front door plus routing to workers over ZeroMQ.
struct CoordinatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coordinator",
        abstract: "Serve Live Caller ID Lookup over HTTP and route queries to workers (see cluster/cluster.yaml).")

    @Option(help: "Cluster config (YAML).")
    var config: String

    @Option(help: "Log level.")
    var logLevel: String = "info"

    func run() async throws {
        let logger = try bootstrapLogging(logLevel)
        let cluster = try ClusterConfig.load(path: config)
        let tracing = try tracingFromEnvironment(serviceName: "callveil-coordinator", logger: logger)
        let metrics = ServiceMetrics(tracer: tracing?.tracer)
        var options = try cluster.coordinatorOptions(path: config)
        options.metrics = metrics
        let context = try ZMQContext()
        let coordinatorOptions = options
        let host = cluster.host ?? "127.0.0.1"
        let holder = cluster.name ?? "\(ProcessInfo.processInfo.hostName):\(cluster.port ?? 8080)"
        let server = try await LookupServer(configPath: cluster.service, pool: nil, metrics: metrics, makeExecutor: { environment in
            var options = coordinatorOptions
            // With a shared store, coordinators elect one placement leader there and the others follow it.
            if let shared = environment.sharedStore {
                options.desiredStore = PostgresDesiredStateStore(store: shared, holder: holder, logger: logger)
            }
            return try ClusterCoordinator(context: context, options: options, keyStore: environment.keyStore, logger: logger)
        }, executorsShareKeyCache: false, logger: logger)
        let app = try server.makeApplication(host: host, port: cluster.port ?? 8080, reloadOnSIGHUP: true, onAdminRunning: { port in
            logger.info("admin listener (/healthz, /metrics)", metadata: ["url": .string("http://\(server.http.adminHost ?? "127.0.0.1"):\(port)")])
        }) { port in
            logger.info("coordinator listening", metadata: ["http": .string("http://\(host):\(port)"), "workers": .string(cluster.bind)])
        }
        try await runUntilSignalled(app, tracing: tracing, logger: logger)
        await server.executor.stop()
        await server.shutdownGateway()
    }
}
