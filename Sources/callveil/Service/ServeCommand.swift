import ArgumentParser
import Hummingbird
import Logging
import Foundation
import LookupCoordinator
import LookupDeployment
import LookupService
import ServiceCore

/// `callveil serve`: the single-host service: the PIR endpoints and the token issuer on `--host:--port`, `/healthz`
/// and `/metrics` on the admin listener (`http.adminHost:adminPort` of the service config, 127.0.0.1:9090 by default).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve Live Caller ID Lookup over HTTP from one host.",
        discussion: "SIGHUP reloads the service config and the use cases; SIGTERM and SIGINT drain and stop.")

    @Option(help: "Service config (JSON: users, usecases, keys).")
    var config: String

    @Option(help: "Address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on.")
    var port: Int = 8080

    @OptionGroup var admin: AdminListenerOptions

    @OptionGroup var logging: LoggingOptions

    @Option(help: "Embedded workers: 0 runs the PIR core directly in the HTTP process; N ≥ 1 runs a coordinator and N workers in this process over inproc://, the cluster's code path.")
    var workers: Int = 1

    func run() async throws {
        let logger = try logging.bootstrap()
        guard workers >= 0, workers <= 64 else { throw ValidationError("--workers must be in 0...64") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        let tracing = try tracingFromEnvironment(serviceName: "callveil", logger: logger)
        let cluster = try EmbeddedCluster(tracer: tracing?.tracer)
        // The embedded workers' shard copies go with the rest of the state (`stateDirectory`, systemd's $STATE_DIRECTORY).
        let state = try ServiceConfig.load(path: config).stateDirectory ?? URL(fileURLWithPath: config).deletingLastPathComponent().path
        let dataDirectory = state + "/embedded-workers"
        let (server, embedded) = try await cluster.startServer(configPath: config, workers: workers, threads: nil,
                                                               dataDirectory: dataDirectory, logger: logger)
        let workerCount = workers
        server.metrics.setBuildInfo(version: callveilVersion)
        let host = self.host
        let adminHost = admin.adminHost ?? server.http.adminHost ?? "127.0.0.1"
        let app = try server.makeApplication(host: host, port: port, reloadOnSIGHUP: true, admin: admin.address, onAdminRunning: { port in
            logger.info("admin listener (/healthz, /metrics)", metadata: ["url": .string("http://\(adminHost):\(port)")])
        }) { port in
            logger.info("listening", metadata: ["url": .string("http://\(host):\(port)"), "workers": "\(workerCount)"])
        }
        try await runUntilSignalled(app, tracing: tracing, logger: logger)
        for worker in embedded { worker.stop() }
        await server.executor.stop()
        await server.shutdownGateway()
    }
}
