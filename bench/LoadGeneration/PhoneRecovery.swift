/// When a phone is back to its baseline latency after a flood. A backlog slows every lookup queued behind it, so
/// recovery is judged on the median of each run of consecutive lookups, not on the slowest one: a lone slow lookup
/// (a token batch fetched on a busy core) is the steady state's own tail, which a baseline of a hundred lookups does
/// not bound.
public enum PhoneRecovery {
    /// The moment (on the lookups' clock) from which every `window` consecutive lookups have their median latency
    /// within `threshold`: the latest end of a lookup over it in a window whose median is over it, or the first
    /// lookup's start if no window's is. Infinity if there is no lookup or a failed one (infinite latency) is in such
    /// a window. `lookups` in order of start; fewer than `window` are judged as one window.
    public static func recoveredAt(_ lookups: [(start: Double, latency: Double)], threshold: Double, window: Int = 5) -> Double {
        guard let first = lookups.first else { return .infinity }
        let size = max(1, min(window, lookups.count))
        var recovered = first.start
        for end in size...lookups.count {
            let run = lookups[(end - size)..<end]
            let sorted = run.map(\.latency).sorted()
            guard sorted[size / 2] > threshold else { continue }
            recovered = max(recovered, run.filter { $0.latency > threshold }.map { $0.start + $0.latency }.max() ?? recovered)
        }
        return recovered
    }
}
