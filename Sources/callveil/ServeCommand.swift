import ArgumentParser
import Hummingbird
import Logging
import LookupService

/// `callveil serve`: the single-host service on one port (PIR endpoints, `/healthz`, `/metrics`).
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

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("unknown log level \(logLevel)") }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "callveil")
        let server = try await LookupServer(configPath: config, logger: logger)
        let host = self.host
        let app = server.makeApplication(host: host, port: port, reloadOnSIGHUP: true) { port in
            logger.info("listening", metadata: ["url": .string("http://\(host):\(port)")])
        }
        try await app.runService()
    }
}
