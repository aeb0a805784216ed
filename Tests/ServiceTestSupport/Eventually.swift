/// Polls `condition` every 10 ms for up to `seconds`; whether it came true (tests `#expect` the result).
public func eventually(seconds: Double = 10, _ condition: () -> Bool) async throws -> Bool {
    try await timeUntil(within: .milliseconds(Int64(seconds * 1000)), condition) != nil
}

/// How long `condition` took to hold, polled every 10 ms for up to `limit` (and once more at the end); nil when
/// it never did. For measuring a takeover or a convergence, not only waiting for it.
public func timeUntil(within limit: Duration, _ condition: () -> Bool) async throws -> Duration? {
    let start = ContinuousClock.now
    while ContinuousClock.now - start < limit {
        if condition() { return ContinuousClock.now - start }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition() ? ContinuousClock.now - start : nil
}
