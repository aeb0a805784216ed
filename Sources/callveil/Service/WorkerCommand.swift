import ArgumentParser
import Foundation
import Hummingbird
import Logging
import LookupCoordinator
import LookupEngine
import LookupService
import LookupWorker
import NIOCore
import ServiceCore
import ServiceLifecycle
import UnixSignals
import ZeroMQ

/// `callveil worker`: holds shards and answers queries for one or several coordinators.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Join the coordinators, hold the shards the leading one assigns, and answer queries from any.",
        discussion: "SIGTERM or SIGINT drains: the coordinator stops routing here, then the worker exits.")

    @Option(help: "Coordinator endpoint, e.g. tcp://10.0.0.1:5555; repeat for several coordinators. A DNS name that resolves to several addresses stands for one coordinator per address.")
    var coordinator: [String]

    @Option(help: "Directory for transferred shards.")
    var dataDir: String

    @Option(help: "PIR threads per query (default: every core).")
    var threads: Int?

    @Option(help: "Worker id (default: the host name).")
    var id: String?

    @Option(help: "This worker's CURVE key file (callveil keygen); required for tcp:// coordinators.")
    var keyFile: String?

    /// Parsed unconditionally: a Z85 key may begin with `-`, which would otherwise read as an option.
    @Option(parsing: .unconditionalSingleValue,
            help: "The coordinators' CURVE public key (Z85, 40 characters; may begin with '-'): once for all, or once per --coordinator in order.")
    var serverKey: [String] = []

    @Option(help: "MiB of shard databases held in memory; shards beyond it are served from mapped scan files (default: no limit).")
    var memoryBudget: Int?

    @Option(help: "MiB of parsed evaluation keys kept in memory (least recently used go first; default 512).")
    var keyCache: Int?

    @Flag(help: "Do not cache each shard's evaluation form on disk (restarts rebuild it; shards cannot exceed the memory budget).")
    var noScanCache = false

    @Option(help: "Admin listener address (/healthz, /metrics); default 127.0.0.1.")
    var adminHost: String = "127.0.0.1"

    @Option(help: "Admin listener port (0 picks a free one); default: no admin listener.")
    var adminPort: Int?

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = try logging.bootstrap()
        if let adminPort, !(0...65535).contains(adminPort) { throw ValidationError("--admin-port must be in 0...65535") }
        guard !coordinator.isEmpty else { throw ValidationError("give at least one --coordinator") }
        guard serverKey.count <= 1 || serverKey.count == coordinator.count else {
            throw ValidationError("give --server-key once for all coordinators or once per --coordinator")
        }
        for key in serverKey where !CurveKeyPair.isZ85Key(key) {
            throw ValidationError("--server-key must be a Z85 CURVE public key of 40 characters")
        }
        let listed = coordinator.enumerated().map { (endpoint: $0.element, serverKey: serverKey.count > 1 ? serverKey[$0.offset] : serverKey.first) }
        let endpoints = CoordinatorEndpoints.expand(listed)
        var options = ClusterWorker.Options(coordinators: endpoints.map(\.endpoint), dataDirectory: dataDir,
                                            workerID: id ?? ProcessInfo.processInfo.hostName)
        options.threads = threads
        if let memoryBudget {
            guard memoryBudget >= 0 else { throw ValidationError("--memory-budget must not be negative") }
            options.memoryBudget = memoryBudget << 20
        }
        if let keyCache {
            let range = ServiceConfig.Keys.cacheMegabytesRange
            guard range.contains(keyCache) else {
                throw ValidationError("--key-cache must be between \(range.lowerBound) and \(range.upperBound) MiB")
            }
            options.keyCacheBytes = keyCache << 20
        }
        options.scanCache = !noScanCache
        if endpoints.contains(where: { $0.endpoint.hasPrefix("tcp://") }) {
            guard let keyFile, !serverKey.isEmpty else {
                throw ValidationError("a tcp:// coordinator needs --key-file and --server-key (CURVE)")
            }
            options.curve = (try CurveKeyFile.read(keyFile), endpoints.map { $0.serverKey ?? serverKey[0] })
        }
        // With tracing on, the worker's spans of each query continue the coordinator's (the query carries its context).
        let tracing = try tracingFromEnvironment(serviceName: "callveil-worker", logger: logger)
        let metrics = ServiceMetrics(tracer: tracing?.tracer)
        metrics.setBuildInfo(version: callveilVersion)
        options.metrics = metrics
        let exporter = tracing.map { ServiceGroup(configuration: .init(services: [$0.service], logger: logger)) }
        let exporting = exporter.map { group in Task { try await group.run() } }
        let context = try ZMQContext()
        let worker = try ClusterWorker(context: context, options: options, logger: logger)
        let admin = try adminPort.map { port in
            ServiceGroup(configuration: .init(services: [try workerAdminListener(worker: worker, id: options.workerID, metrics: metrics,
                                                                                  host: adminHost, port: port, logger: logger)],
                                              logger: logger))
        }
        let adminRunning = admin.map { group in Task { try await group.run() } }
        logger.info("worker started", metadata: ["id": .string(options.workerID),
                                                 "coordinators": .string(options.coordinators.joined(separator: " "))])
        for await signal in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
            logger.info("draining", metadata: ["signal": "\(signal)"])
            break
        }
        worker.stop()
        await admin?.triggerGracefulShutdown()
        _ = try? await adminRunning?.value
        await exporter?.triggerGracefulShutdown()  // after the worker: its last spans are sent
        _ = try? await exporting?.value
    }
}

/// The worker's admin listener: `/healthz` (alive; its id and the shards it holds) and `/metrics`.
private func workerAdminListener(worker: ClusterWorker, id: String, metrics: ServiceMetrics, host: String, port: Int,
                                 logger: Logger) throws -> some Service {
    let router = Router()
    router.get("/healthz") { _, _ -> Response in
        let body = "{\"status\":\"ok\",\"worker\":\(StructuredLogHandler.jsonString(id)),\"shards\":\(worker.loadedShards.count)}"
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }
    AdminRoutes.addMetrics(to: router, metrics: metrics)
    let app = Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "CallVeil"),
                          onServerRunning: { channel in
                              logger.info("admin listener (/healthz, /metrics)",
                                          metadata: ["url": .string("http://\(host):\(channel.localAddress?.port ?? port)")])
                          }, logger: logger)
    return ListenerService(app, listener: "admin listener", host: host, port: port, logger: logger)
}
