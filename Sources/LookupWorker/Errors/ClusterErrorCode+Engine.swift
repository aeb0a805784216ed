import LookupEngine
import LookupProtocol

/// The cluster's error codes (`callveil.cluster.v1.ErrorCode`): why a worker could not answer, independent of HTTP.
public typealias ClusterErrorCode = Callveil_Cluster_V1_ErrorCode

extension ClusterErrorCode {
    /// The code a worker sends for an error thrown while answering a query: an engine error's code as it is (the
    /// wire has one code for each outcome the coordinator treats differently), library errors on the query's content
    /// as a bad request.
    package static func from(_ error: any Error) -> (ClusterErrorCode, String) {
        switch error {
        case is CancellationError: return (.cancelled, "cancelled")
        case let e as ComputePoolError: return e == .cancelled ? (.cancelled, "cancelled") : (.unavailable, "Server busy: \(e)")
        case let e as EngineError: return (ClusterErrorCode(e.code), e.message)
        default:
            guard let engine = EngineError(clientInput: error) else { return (.internal, "worker error") }
            return (.badRequest, engine.message)
        }
    }

    /// The wire code of an engine code.
    package init(_ code: EngineError.Code) {
        switch code {
        case .invalidQuery, .unknownUseCase: self = .badRequest
        case .evaluationKeyNotFound: self = .evaluationKeyNotFound
        case .shardNotHeld, .configurationGone: self = .shardNotHeld
        case .overloaded, .unavailable: self = .unavailable
        case .cancelled: self = .cancelled
        default: self = .internal
        }
    }

    /// Whether the coordinator retries the query on another replica.
    package var isRetryable: Bool {
        switch self {
        case .badRequest, .evaluationKeyNotFound: return false
        default: return true  // unavailable, not held, internal, and values this build does not know
        }
    }

    /// The engine error for a code that is not retried (`message` is the worker's reason, cut to a safe length).
    package func engineError(message: String) -> EngineError {
        switch self {
        case .evaluationKeyNotFound: return .evaluationKeyNotFound
        case .badRequest: return EngineError(.invalidQuery, String(message.prefix(ClusterLimits.maxReasonCharacters)))
        default: return EngineError(.unavailable, "A worker could not answer; retry later")
        }
    }
}
