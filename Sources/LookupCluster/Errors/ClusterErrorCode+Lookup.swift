import LookupProtocol
import LookupService

/// The cluster's error codes (`callveil.cluster.v1.ErrorCode`): why a worker could not answer, independent of HTTP.
public typealias ClusterErrorCode = Callveil_Cluster_V1_ErrorCode

extension ClusterErrorCode {
    /// The code a worker sends for an error thrown while answering a query.
    static func from(_ error: any Error) -> (ClusterErrorCode, String) {
        if error is CancellationError || (error as? ComputePoolError) == .cancelled { return (.cancelled, "cancelled") }
        guard let lookup = LookupError.from(error) else { return (.internal, "worker error") }
        if lookup == .evaluationKeyNotFound { return (.evaluationKeyNotFound, lookup.message) }
        switch lookup.status.code {
        case 410: return (.shardNotHeld, lookup.message)
        case 400..<500: return (.badRequest, lookup.message)
        case 503, 504: return (.unavailable, lookup.message)
        default: return (.internal, "worker error")
        }
    }

    /// Whether the coordinator retries the query on another replica.
    var isRetryable: Bool {
        switch self {
        case .badRequest, .evaluationKeyNotFound: return false
        default: return true  // unavailable, not held, internal, and values this build does not know
        }
    }

    /// The HTTP answer for a code that is not retried (`message` is the worker's reason, cut to a safe length).
    func lookupError(message: String) -> LookupError {
        switch self {
        case .evaluationKeyNotFound: return .evaluationKeyNotFound
        case .badRequest: return .badRequest(String(message.prefix(ClusterLimits.maxReasonCharacters)))
        default: return LookupError(.serviceUnavailable, "A worker could not answer; retry later")
        }
    }
}
