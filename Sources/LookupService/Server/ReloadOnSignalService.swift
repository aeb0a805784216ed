import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the service config and use cases on SIGHUP, without dropping queries in flight.
struct ReloadOnSignalService: Service {
    let server: LookupServer
    let logger: Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            logger.info("SIGHUP: reloading the service config")
            do {
                let failed = try await server.reload()
                if failed.isEmpty {
                    logger.info("reload done: every use case at its configured version")
                } else {
                    logger.error("reload failed for some use cases; they serve their previous version",
                                 metadata: ["failedUseCases": .string(failed.joined(separator: ","))])
                }
            } catch {
                logger.error("reload failed; serving the previous configuration", metadata: ["error": .string("\(error)")])
            }
        }
    }
}
