import Foundation
import Logging
import LookupEngine
import Synchronization

/// Refused worker handshakes (an unknown or revoked CURVE key): each counted in
/// `callveil_cluster_handshakes_refused_total`, and logged with the peer's address, at most once every ten seconds
/// with the number refused since, so a stranger retrying cannot flood the log.
final class RefusalLog: Sendable {
    private let logger: Logger
    private let metrics: ServiceMetrics?
    private let state = Mutex<(last: ContinuousClock.Instant?, suppressed: Int)>((nil, 0))
    private static let interval = Duration.seconds(10)

    init(logger: Logger, metrics: ServiceMetrics?) {
        self.logger = logger
        self.metrics = metrics
    }

    /// Records one refused handshake from `address`.
    func refused(address: String, mechanism: String) {
        metrics?.increment("callveil_cluster_handshakes_refused_total")
        let now = ContinuousClock.now
        let suppressed: Int? = state.withLock { s in
            if let last = s.last, now - last < Self.interval {
                s.suppressed += 1
                return nil
            }
            defer { s = (now, 0) }
            return s.suppressed
        }
        guard let suppressed else { return }
        logger.warning("worker handshake refused: its CURVE key is not in the allow-list (unknown or revoked)",
                       metadata: ["peer": .string(address), "mechanism": .string(mechanism),
                                  "refusedSinceLastLog": .stringConvertible(suppressed)])
    }
}
