import ArgumentParser
import ClusterTransport
import Foundation
import Hummingbird
import Logging
import LookupCoordinator
import LookupEngine
import LookupService
import ServiceCore
import ZeroMQ

/// `callveil coordinator`: the HTTP front door plus routing to workers over ZeroMQ.
struct CoordinatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coordinator",
        abstract: "Serve Live Caller ID Lookup over HTTP and route queries to workers (see cluster/cluster.yaml).")

    @Option(help: "Cluster config (YAML).")
    var config: String

    @Option(help: "Address of the HTTP front door (default: host of the cluster config, else 127.0.0.1).")
    var host: String?

    @Option(help: "Port of the HTTP front door (default: port of the cluster config, else 8080).")
    var port: Int?

    @OptionGroup var admin: AdminListenerOptions

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = try logging.bootstrap()
        let cluster = try ClusterConfig.load(path: config)
        let tracing = try tracingFromEnvironment(serviceName: "callveil-coordinator", logger: logger)
        let metrics = ServiceMetrics(tracer: tracing?.tracer)
        metrics.setBuildInfo(version: callveilVersion)
        var options = try cluster.coordinatorOptions(path: config)
        options.metrics = metrics
        let host = self.host ?? cluster.host ?? "127.0.0.1", port = self.port ?? cluster.port ?? 8080
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        let holder = cluster.name ?? "\(ProcessInfo.processInfo.hostName):\(port)"
        // The shard files workers fetch are kept with the service's state, a folder per coordinator (two started from
        // one service config share its state directory), and read a chunk at a time.
        let state = try ServiceConfig.load(path: cluster.service).stateDirectory
            ?? URL(fileURLWithPath: cluster.service).deletingLastPathComponent().path
        options.spoolDirectory = "\(state)/coordinator-spool/\(FolderName.safe(holder))"
        let context = try ZMQContext()
        let coordinatorOptions = options
        let server = try await LookupServer(configPath: cluster.service, pool: nil, metrics: metrics, makeExecutor: { environment in
            var options = coordinatorOptions
            // With a shared store, coordinators elect one placement leader there and the others follow it.
            if let shared = environment.sharedStore {
                options.desiredStore = PostgresDesiredStateStore(store: shared, holder: holder, logger: logger)
            }
            return try ClusterCoordinator(context: context, options: options, keyStore: environment.keyStore, logger: logger)
        }, executorsShareKeyCache: false, logger: logger)
        let adminHost = admin.adminHost ?? server.http.adminHost ?? "127.0.0.1"
        let app = try server.makeApplication(host: host, port: port, reloadOnSIGHUP: true, admin: admin.address, onAdminRunning: { port in
            logger.info("admin listener (/healthz, /metrics)", metadata: ["url": .string("http://\(adminHost):\(port)")])
        }) { port in
            logger.info("coordinator listening", metadata: ["http": .string("http://\(host):\(port)"), "workers": .string(cluster.bind)])
        }
        try await runUntilSignalled(app, tracing: tracing, logger: logger)
        await server.executor.stop()
        await server.shutdownGateway()
    }
}
