/// The round trip of shard-transfer requests on one cluster link, smoothed as TCP's retransmission timer is
/// (RFC 6298): a lost request or chunk is asked for again after a few round trips, not after a fixed stall, and the
/// wait doubles while requests go unanswered so a slow peer is not flooded with repeats.
public struct RoundTripEstimate: Sendable, Equatable {
    /// The smoothed round trip, seconds (nil before the first sample).
    public private(set) var smoothed: Double?
    /// Its mean deviation, seconds.
    public private(set) var variation: Double = 0

    /// No round trip measured yet.
    public init() {}

    /// Adds one round trip, measured on a request that was sent once (Karn: an answer to a repeated request may
    /// answer either copy, so it is no sample).
    public mutating func add(_ sample: Duration) {
        let seconds = max(0, Double(sample.components.seconds) + Double(sample.components.attoseconds) * 1e-18)
        guard let smoothed else {
            self.smoothed = seconds
            variation = seconds / 2
            return
        }
        variation = 0.75 * variation + 0.25 * abs(smoothed - seconds)
        self.smoothed = 0.875 * smoothed + 0.125 * seconds
    }

    /// How long to wait for an answer after `unanswered` requests in a row went without one: the smoothed round
    /// trip plus four deviations (1 s before any sample), doubled per unanswered request, within [`floor`,
    /// `ceiling`].
    public func timeout(floor: Duration, ceiling: Duration, unanswered: Int) -> Duration {
        let base = smoothed.map { Duration.nanoseconds(Int64(min(($0 + 4 * variation) * 1e9, 3600e9))) } ?? .seconds(1)
        var wait = max(base, floor)
        for _ in 0..<min(unanswered, 16) where wait < ceiling { wait = wait * 2 }
        return min(wait, ceiling)
    }
}
