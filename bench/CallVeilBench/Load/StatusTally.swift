import Foundation
import LookupClient
import Synchronization

/// What one load source got back, by outcome: `200`, `503 + Retry-After`, `429 + Retry-After`, a status without
/// `Retry-After`, `413`, other statuses, transport errors. The overload table prints one row per source.
final class StatusTally: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    /// Counts one outcome (`count` times).
    func add(_ outcome: String, count: Int = 1) { counts.withLock { $0[outcome, default: 0] += count } }

    /// Counts the outcome of a request that threw `error` (nil: it succeeded).
    func add(error: (any Error)?) { add(Self.outcome(error)) }

    /// The counts so far.
    var snapshot: [String: Int] { counts.withLock { $0 } }

    /// The counts as `outcome: count`, the most frequent first (a row of the overload table, a flood's summary line).
    var summary: String {
        snapshot.sorted { $0.value > $1.value }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    }

    /// Total requests counted.
    var total: Int { snapshot.values.reduce(0, +) }

    /// The outcome name of an error.
    static func outcome(_ error: (any Error)?) -> String {
        guard let error else { return "200" }
        if error is CancellationError { return "cancelled at the flood's end" }
        guard let error = error as? LookupClientError else { return "transport error" }
        switch error.code {
        case .unavailable: return error.retryAfter == nil ? "\(error.status ?? 0) without Retry-After" : "\(error.status ?? 0) + Retry-After"
        case .http: return "\(error.status ?? 0)"
        case .protocolViolation: return "bad answer"
        default: return "transport error"
        }
    }
}
