import BFV
import Hummingbird
import LookupEngine
import LookupProtocol
import LookupStorage
import NIOHTTP1
import PIR
import SwiftProtobuf

/// A request the service refuses, with the HTTP status and the reason sent to the client (SPEC-PIR §7.3).
public struct LookupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status to answer.
    public let status: HTTPResponse.Status
    /// The reason, safe to show to the client (never key, token or ciphertext bytes).
    public let message: String
    /// Seconds for `Retry-After` on 503 and 429 answers (1 when not given).
    public let retryAfter: Int?

    /// An error with a status and a reason.
    public init(_ status: HTTPResponse.Status, _ message: String, retryAfter: Int? = nil) {
        self.status = status
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(status.code) \(message)" }

    /// 400 with a reason.
    public static func badRequest(_ message: String) -> LookupError { .init(.badRequest, message) }

    /// 413: the request's body, declared or received, exceeds the route's `limit`.
    public static func contentTooLarge(limit: Int) -> LookupError {
        .init(.contentTooLarge, "Request body exceeds \(limit) bytes")
    }

    /// 503 with `Retry-After`: the service is saturated (or has no replica) now.
    public static func unavailable(_ message: String, retryAfter: Int = 1) -> LookupError {
        .init(.serviceUnavailable, message, retryAfter: retryAfter)
    }

    /// 429 with `Retry-After`: this caller has exceeded its rate.
    public static func tooManyRequests(_ message: String, retryAfter: Int) -> LookupError {
        .init(.tooManyRequests, message, retryAfter: retryAfter)
    }

    /// The error to answer for any error thrown while serving: library errors on client input are 400.
    public static func from(_ error: any Error) -> LookupError? {
        switch error {
        case let e as LookupError: return e
        case let e as EngineError: return LookupError(e)
        case let e as ComputePoolError: return .unavailable("Server busy: \(e)")
        case let e as StoreError where e.code == .unavailable: return .unavailable("Storage is unavailable; retry later", retryAfter: 2)
        case let e as HTTPParserError: return .badRequest("Malformed HTTP request: \(e)")  // a body that breaks HTTP framing
        default: return EngineError(clientInput: error).map { LookupError($0) }
        }
    }
}

extension LookupError {
    /// The HTTP answer for an engine error: its code decides the status, its message is sent as it is.
    public init(_ error: EngineError) {
        switch error.code {
        case .unknownUseCase, .invalidQuery, .evaluationKeyNotFound: self.init(.badRequest, error.message)
        case .configurationGone: self.init(.gone, error.message)
        case .overloaded: self.init(.serviceUnavailable, error.message, retryAfter: 1)
        case .internal: self.init(.internalServerError, error.message)
        default: self.init(.serviceUnavailable, error.message, retryAfter: 1)  // not held, unavailable, cancelled, unloadable
        }
    }

    /// No usable evaluation key: the device re-syncs its key through `/config` and `/key` (SPEC-PIR §7.3).
    public static let evaluationKeyNotFound = LookupError(.badRequest, "Evaluation key not found")
    /// The request names a use case the service does not have.
    public static let unknownUseCase = LookupError(.badRequest, "Unknown usecase")
}
