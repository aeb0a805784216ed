import Logging
import ServiceLifecycle

/// Deletes expired evaluation keys every `interval` (they are already reported missing once expired).
struct KeyExpiryService: Service {
    let server: LookupServer
    let logger: Logger
    var interval: Duration = .seconds(3600)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let purged = try await server.purgeExpiredKeys()
                    if purged > 0 { logger.info("expired evaluation keys deleted", metadata: ["count": .stringConvertible(purged)]) }
                } catch {
                    logger.error("key expiry failed", metadata: ["error": .string("\(error)")])
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }
}
