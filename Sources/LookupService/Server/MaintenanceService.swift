import Logging
import ServiceLifecycle

/// Hourly upkeep: deletes expired evaluation keys (already reported missing once expired), rotates issuer keys
/// that are due, and forgets the nonces of retired issuer keys.
struct MaintenanceService: Service {
    let server: LookupServer
    let logger: Logger
    var interval: Duration = .seconds(3600)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let purged = try await server.maintain()
                    if purged > 0 { logger.info("expired evaluation keys deleted", metadata: ["count": .stringConvertible(purged)]) }
                } catch {
                    logger.error("maintenance failed", metadata: ["error": .string("\(error)")])
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }
}
