import ClusterTransport
import LookupEngine
import LookupProtocol

/// The cluster's error codes (`callveil.cluster.v1.ErrorCode`): why a worker could not answer, independent of HTTP.
public typealias ClusterErrorCode = Callveil_Cluster_V1_ErrorCode

extension ClusterErrorCode {
    /// The code a worker sends for an error thrown while answering a query: an engine error's code as it is (the
    /// wire has one code for each engine code), library errors on the query's content as a bad request.
    package static func from(_ error: any Error) -> (ClusterErrorCode, String) {
        switch error {
        case is CancellationError: return (.cancelled, "cancelled")
        case let e as ComputePoolError: return e == .cancelled ? (.cancelled, "cancelled") : (.overloaded, "Server busy: \(e)")
        case let e as EngineError: return (ClusterErrorCode(e.code), e.message)
        default:
            guard let engine = EngineError(clientInput: error) else { return (.internal, "worker error") }
            return (.badRequest, engine.message)
        }
    }

    /// The wire code of an engine code: one each.
    package init(_ code: EngineError.Code) {
        switch code {
        case .invalidQuery: self = .badRequest
        case .unknownUseCase: self = .unknownUseCase
        case .evaluationKeyNotFound: self = .evaluationKeyNotFound
        case .shardNotHeld: self = .shardNotHeld
        case .configurationGone: self = .configurationGone
        case .overloaded: self = .overloaded
        case .unavailable: self = .unavailable
        case .cancelled: self = .cancelled
        case .unloadable: self = .unloadable
        default: self = .internal
        }
    }

    /// The engine code of a wire code (nil for none and for values this build does not know).
    package var engineCode: EngineError.Code? {
        switch self {
        case .badRequest: return .invalidQuery
        case .unknownUseCase: return .unknownUseCase
        case .evaluationKeyNotFound: return .evaluationKeyNotFound
        case .shardNotHeld: return .shardNotHeld
        case .configurationGone: return .configurationGone
        case .overloaded: return .overloaded
        case .unavailable: return .unavailable
        case .cancelled: return .cancelled
        case .unloadable: return .unloadable
        case .internal: return .internal
        default: return nil
        }
    }

    /// Whether the coordinator retries the query on another replica: not for the device's own faults.
    package var isRetryable: Bool {
        switch self {
        case .badRequest, .unknownUseCase, .evaluationKeyNotFound: return false
        default: return true  // unavailable, not held, internal, and values this build does not know
        }
    }

    /// The engine error for a code that is not retried (`message` is the worker's reason, cut to a safe length).
    package func engineError(message: String) -> EngineError {
        switch self {
        case .evaluationKeyNotFound: return .evaluationKeyNotFound
        case .unknownUseCase, .badRequest:
            return EngineError(engineCode ?? .invalidQuery, String(message.prefix(ClusterLimits.maxReasonCharacters)))
        default: return EngineError(.unavailable, "A worker could not answer; retry later")
        }
    }
}
