import ArgumentParser
import Foundation
import Logging
import LookupCluster
import LookupService
import ServiceLifecycle
import UnixSignals
import ZeroMQ

/// `callveil worker`: holds shards and answers queries for a coordinator.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Join a coordinator, hold the shards it assigns, and answer queries.",
        discussion: "SIGTERM or SIGINT drains: the coordinator stops routing here, then the worker exits.")

    @Option(help: "Coordinator endpoint, e.g. tcp://10.0.0.1:5555.")
    var coordinator: String

    @Option(help: "Directory for transferred shards.")
    var dataDir: String

    @Option(help: "PIR threads per query (default: every core).")
    var threads: Int?

    @Option(help: "Worker id (default: the host name).")
    var id: String?

    @Option(help: "This worker's CURVE key file (callveil keygen); required for tcp:// coordinators.")
    var keyFile: String?

    /// Parsed unconditionally: a Z85 key may begin with `-`, which would otherwise read as an option.
    @Option(parsing: .unconditional, help: "The coordinator's CURVE public key (Z85, 40 characters; may begin with '-').")
    var serverKey: String?

    @Option(help: "MiB of shard databases held in memory; shards beyond it are served from mapped scan files (default: no limit).")
    var memoryBudget: Int?

    @Flag(help: "Do not cache each shard's evaluation form on disk (restarts rebuild it; shards cannot exceed the memory budget).")
    var noScanCache = false

    @Option(help: "Log level.")
    var logLevel: String = "info"

    func run() async throws {
        let logger = try bootstrapLogging(logLevel)
        var options = ClusterWorker.Options(coordinator: coordinator, dataDirectory: dataDir,
                                            workerID: id ?? ProcessInfo.processInfo.hostName)
        options.threads = threads
        if let memoryBudget {
            guard memoryBudget >= 0 else { throw ValidationError("--memory-budget must not be negative") }
            options.memoryBudget = memoryBudget << 20
        }
        options.scanCache = !noScanCache
        if coordinator.hasPrefix("tcp://") {
            guard let keyFile, let serverKey else {
                throw ValidationError("a tcp:// coordinator needs --key-file and --server-key (CURVE)")
            }
            guard CurveKeyPair.isZ85Key(serverKey) else {
                throw ValidationError("--server-key must be a Z85 CURVE public key of 40 characters")
            }
            options.curve = (try CurveKeyFile.read(keyFile), serverKey)
        }
        let context = try ZMQContext()
        let worker = try ClusterWorker(context: context, options: options, logger: logger)
        logger.info("worker started", metadata: ["id": .string(options.workerID), "coordinator": .string(coordinator)])
        for await signal in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
            logger.info("draining", metadata: ["signal": "\(signal)"])
            break
        }
        worker.stop()
    }
}
