import LookupClient
import Synchronization

/// An authorization provider that adds up the time its wrapped provider takes (the phone reports how much of
/// its latency is token issuance).
final class TimedAuthorization: AuthorizationProvider {
    let inner: any AuthorizationProvider
    private let total = Mutex(0.0)

    init(_ inner: any AuthorizationProvider) { self.inner = inner }

    /// Seconds spent in `authorization()` so far.
    var seconds: Double { total.withLock { $0 } }

    func authorization() async throws -> String? {
        let start = ContinuousClock.now
        defer { total.withLock { $0 += (ContinuousClock.now - start).seconds } }
        return try await inner.authorization()
    }
}
