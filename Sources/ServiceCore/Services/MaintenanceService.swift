import Logging
import ServiceLifecycle

/// Periodic upkeep (hourly by default): for the service, deleting expired evaluation keys, rotating issuer and
/// gateway keys that are due, forgetting the nonces of retired issuer keys; for a stand-alone gateway, rotating
/// its keys. A failed pass is logged and retried at the next.
package struct MaintenanceService: Service {
    package let logger: Logger
    package var interval: Duration = .seconds(3600)
    package let work: @Sendable () async throws -> Void

    /// Upkeep that runs `work` every `interval`.
    package init(logger: Logger, interval: Duration = .seconds(3600), work: @escaping @Sendable () async throws -> Void) {
        self.logger = logger
        self.interval = interval
        self.work = work
    }

    package func run() async throws {
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
