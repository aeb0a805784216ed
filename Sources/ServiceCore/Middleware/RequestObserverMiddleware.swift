import Hummingbird
import Logging
import LookupEngine

/// Outermost middleware: turns every error into an HTTP answer with a reason (library errors on client
/// input are 400, anything unexpected 500 without details), and records metrics per route and status.
public struct RequestObserverMiddleware: RouterMiddleware {
    package let metrics: ServiceMetrics
    package static let routes: Set<String> = [
        "/config", "/key", "/queries", "/healthz", "/metrics", "/.well-known/private-token-issuer-directory",
        "/token-key-for-user-token", "/issue", "/ohttp-gateway", "/ohttp-configs",
    ]

    /// Middleware recording into `metrics`.
    public init(metrics: ServiceMetrics) {
        self.metrics = metrics
    }

    public func handle(_ request: Request, context: LookupRequestContext,
                       next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        let route = Self.routes.contains(request.uri.path) ? request.uri.path : "other"
        guard let tracer = metrics.tracer else { return try await observe(request, context: context, route: route, next: next) }
        return try await traced(request, route: route, tracer: tracer) {
            try await observe(request, context: context, route: route, next: next)
        }
    }

    private func observe(_ request: Request, context: LookupRequestContext, route: String,
                         next: (Request, LookupRequestContext) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            metrics.recordRequest(route: route, status: Int(response.status.code), duration: ContinuousClock.now - start)
            return response
        } catch {
            let mapped: any HTTPResponseError
            let reason: String
            if let lookup = LookupError.from(error) {
                mapped = lookup
                reason = lookup.message
            } else if let http = error as? HTTPError {
                mapped = http
                reason = http.body ?? ""
            } else if error is CancellationError {
                // The client went away (CancelOnDisconnectResponder) or the server is stopping: not a fault.
                metrics.recordRequest(route: route, status: 499, duration: ContinuousClock.now - start)
                throw error
            } else {
                context.logger.error("internal error", metadata: ["route": .string(route), "error": .string(String(describing: type(of: error)))])
                mapped = LookupError(.internalServerError, "Internal error")
                reason = "Internal error"
            }
            if mapped.status.code < 500 {
                context.logger.info("refused request", metadata: ["route": .string(route), "status": .stringConvertible(mapped.status.code),
                                                                  "reason": .string(reason)])
                metrics.recordRejection(reason: Self.rejectionReason(ofStatus: Int(mapped.status.code)))
            }
            metrics.recordRequest(route: route, status: Int(mapped.status.code), duration: ContinuousClock.now - start)
            throw mapped
        }
    }

    /// The `reason` label of a refusal: a bounded name for its status, never the number itself.
    package static func rejectionReason(ofStatus status: Int) -> String {
        switch status {
        case 400: "bad_request"
        case 401: "unauthorized"
        case 403: "forbidden"
        case 404: "not_found"
        case 405: "method_not_allowed"
        case 408: "request_timeout"
        case 410: "gone"
        case 413: "too_large"
        case 415: "unsupported_media_type"
        case 429: "rate_limited"
        default: "other"
        }
    }
}
