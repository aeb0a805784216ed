import Logging
import ServiceLifecycle

/// Periodic upkeep (hourly by default): for the service, deleting expired evaluation keys, rotating issuer and
/// gateway keys that are due, forgetting the nonces of retired issuer keys; for a stand-alone gateway, rotating
/// its keys. A failed pass is logged and retried at the next.
struct MaintenanceService: Service {
    let logger: Logger
    var interval: Duration = .seconds(3600)
    let work: @Sendable () async throws -> Void

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await work() } catch {
                    logger.error("maintenance failed", metadata: ["error": .string("\(error)")])
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }
}
