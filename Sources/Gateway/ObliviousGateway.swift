import Foundation
import Logging
import LookupEngine
import LookupStorage
import ObliviousHTTP
import ServiceCore
import Synchronization

/// The Oblivious HTTP gateway resource (RFC 9458 §5): opens `message/ohttp-req` bodies with the key ring,
/// refuses replays, decodes the Binary HTTP request, has the target answer it, and seals the Binary HTTP response
/// as `message/ohttp-res`. It never logs or counts anything of the inner request: its metrics are results and
/// durations, its logs codes.
public final class ObliviousGateway: Sendable {
    /// An answer to the outer request.
    public struct Answer: Sendable {
        /// HTTP status.
        public let status: Int
        /// `message/ohttp-res`, or `application/problem+json` for errors in the clear.
        public let contentType: String
        /// The body.
        public let body: [UInt8]
    }

    /// The keys.
    public let keys: GatewayKeyRing
    /// Replay detection in this process.
    public let replay: GatewayReplayCache
    /// The replay record shared by every gateway of a shared store (nil: keys are this gateway's own).
    public let sharedReplay: PostgresReplayStore?
    /// Sizes inner responses are padded to (`ServiceConfig.Gateway.responseSizeClasses`).
    public let sizeClasses: [Int]
    /// Where inner requests go.
    public let target: any GatewayTarget
    private let metrics: ServiceMetrics
    private let limits: BinaryHTTPLimits
    private let logger: Logger
    /// Loads keys other gateways created (the shared store), at most every 10 s, when a request names a key
    /// identifier this one does not hold yet.
    private let refresh: (@Sendable () async throws -> Void)?
    private let lastRefresh = Mutex<ContinuousClock.Instant?>(nil)

    /// A gateway over `keys` answering through `target`; `refresh` reloads the keys from a shared store.
    public init(keys: GatewayKeyRing, replay: GatewayReplayCache, target: any GatewayTarget, metrics: ServiceMetrics, logger: Logger,
                refresh: (@Sendable () async throws -> Void)? = nil, sharedReplay: PostgresReplayStore? = nil, sizeClasses: [Int] = []) {
        self.keys = keys
        self.sizeClasses = sizeClasses
        self.replay = replay
        self.sharedReplay = sharedReplay
        self.target = target
        self.refresh = refresh
        self.metrics = metrics
        var limits = BinaryHTTPLimits()
        limits.maxContentBytes = keys.kind.maxRequestBytes
        self.limits = limits
        self.logger = logger
    }

    /// The media type of encapsulated requests.
    public static let requestMediaType = "message/ohttp-req"
    /// The media type of encapsulated responses.
    public static let responseMediaType = "message/ohttp-res"
    /// The media type of key configurations.
    public static let keysMediaType = "application/ohttp-keys"

    /// Answers one outer request whose body is `message` and whose `Content-Type` is `contentType`.
    public func handle(_ message: [UInt8], contentType: String?, context: LookupRequestContext) async -> Answer {
        let start = ContinuousClock.now
        let answer: Answer
        let result: String
        do {
            (answer, result) = try await open(message, contentType: contentType, context: context)
        } catch let error as GatewayError {
            return refused(error, since: start)
        } catch {
            (answer, result) = (Answer(status: 500, contentType: "application/problem+json",
                                       body: GatewayError(.targetFailed, "internal error").problemJSON), "internal")
            logger.error("gateway failed", metadata: ["error": .string(String(describing: type(of: error)))])
        }
        record(result, since: start)
        return answer
    }

    /// The answer in the clear to a request refused before it opened, counted.
    func refused(_ error: GatewayError, since start: ContinuousClock.Instant = .now) -> Answer {
        logger.debug("gateway refused a request", metadata: ["code": .string(error.code.name)])
        record(error.code.name, since: start)
        return Answer(status: error.status, contentType: "application/problem+json", body: error.problemJSON)
    }

    /// Counts one outer request by result and records its duration.
    private func record(_ result: String, since start: ContinuousClock.Instant) {
        metrics.increment("callveil_ohttp_requests_total", dimensions: [("result", result)])
        metrics.recordDuration("callveil_ohttp_request_seconds", ContinuousClock.now - start, dimensions: [("phase", "total")])
    }

    private func open(_ message: [UInt8], contentType: String?, context: LookupRequestContext) async throws -> (Answer, String) {
        guard MediaType.essence(contentType) == Self.requestMediaType else {
            throw GatewayError(.unsupportedMediaType, "the body must be \(Self.requestMediaType)")
        }
        guard var gateway = keys.gateway else { throw GatewayError(.noKeys, "the gateway has no key yet") }
        if let id = message.first, !gateway.keys.contains(where: { $0.keyID == id }), await refreshed() {
            gateway = keys.gateway ?? gateway  // another gateway rotated first: its new key is in the store
        }
        if let id = message.first, keys.hasExpired(keyID: id) {
            metrics.increment("callveil_ohttp_decapsulation_failures_total", dimensions: [("code", "expiredKey")])
            throw GatewayError(.keyConfiguration, "the key has expired; fetch the key configuration again")
        }
        let opened: OHTTPOpenedRequest
        let start = ContinuousClock.now
        do {
            opened = try gateway.decapsulate(message)
            metrics.recordStage(.decapsulation, .now - start)
        } catch let error as OHTTPError {
            metrics.increment("callveil_ohttp_decapsulation_failures_total", dimensions: [("code", error.code.name)])
            switch error.code {
            case .unknownKeyID: throw GatewayError(.keyConfiguration, "unknown key identifier; fetch the key configuration again")
            case .unsupportedCipherSuite: throw GatewayError(.keyConfiguration, "the key does not offer this suite")
            case .messageTooLarge: throw GatewayError(.tooLarge, "the encapsulated request exceeds \(gateway.maxRequestBytes) bytes")
            default: throw GatewayError(.undecryptable, "the encapsulated request does not open")
            }
        }
        guard replay.admit(opened.context.encapsulatedKey) else {
            throw GatewayError(.replayed, "this encapsulated request was already received")
        }
        if let sharedReplay {
            // Keys are shared, so another gateway may have opened this request: its record decides, and without the
            // record the request is not opened (a replay must not pass because the store was down).
            let fresh: Bool
            do { fresh = try await sharedReplay.admit(opened.context.encapsulatedKey) } catch {
                throw GatewayError(.replayRecordUnavailable, "the replay record is unavailable; retry later")
            }
            guard fresh else { throw GatewayError(.replayed, "this encapsulated request was already received") }
        }
        let response: BinaryHTTPResponse
        let result: String
        do {
            let inner = try BinaryHTTPRequest(decoding: opened.request, limits: limits)
            let forwardStart = ContinuousClock.now
            response = try await target.forward(inner, context: context)
            metrics.recordDuration("callveil_ohttp_request_seconds", ContinuousClock.now - forwardStart, dimensions: [("phase", "target")])
            result = "ok"
        } catch let error as BinaryHTTPError {
            response = Self.problem(GatewayError(.badInnerRequest, "the inner request is not valid binary HTTP (\(error.code))"))
            result = GatewayError.Code.badInnerRequest.name
        } catch let error as GatewayError {
            response = Self.problem(error)
            result = error.code.name
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            logger.error("gateway target failed", metadata: ["error": .string(String(describing: type(of: error)))])
            response = Self.problem(GatewayError(.targetFailed, "the target failed"))
            result = GatewayError.Code.targetFailed.name
        }
        let sealed = try opened.context.encapsulate(Self.padded(try response.encoded(), to: sizeClasses))
        return (Answer(status: 200, contentType: Self.responseMediaType, body: sealed), result)
    }

    /// `message` zero-padded (RFC 9292 §3.8) to the smallest of `classes` that holds it, or beyond the largest to a
    /// multiple of it; unchanged without classes.
    static func padded(_ message: [UInt8], to classes: [Int]) -> [UInt8] {
        guard let largest = classes.last else { return message }
        let size = classes.first { $0 >= message.count } ?? (message.count + largest - 1) / largest * largest
        return message + [UInt8](repeating: 0, count: size - message.count)
    }

    /// Reloads the keys from the shared store unless that was done in the last 10 s; whether it ran.
    private func refreshed() async -> Bool {
        guard let refresh else { return false }
        let now = ContinuousClock.now
        let due = lastRefresh.withLock { last in
            guard last.map({ now - $0 >= .seconds(10) }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return false }
        do { try await refresh() } catch {
            logger.warning("gateway keys could not be reloaded", metadata: ["error": .string("\(error)")])
            return false
        }
        return true
    }

    /// An inner error response (sealed like any other).
    static func problem(_ error: GatewayError) -> BinaryHTTPResponse {
        BinaryHTTPResponse(status: error.status, headers: [BinaryHTTPField("content-type", "application/problem+json")],
                           content: error.problemJSON)
    }
}
