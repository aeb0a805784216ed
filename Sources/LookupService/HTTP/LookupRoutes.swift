import Foundation
import Hummingbird
import LookupProtocol
import NIOCore
import SwiftProtobuf

/// The HTTP routes: the PIR endpoints behind their middleware chain (Privacy Pass → User-Identifier →
/// User-Agent, SPEC-PIR §7.3; `/config` gzip-encoded when accepted). `/healthz` and `/metrics` are on the admin
/// listener (`AdminRoutes`).
public enum LookupRoutes {
    /// Adds the public routes to `router`; `verifier` nil leaves the PIR endpoints unauthenticated; `budget` bounds
    /// the body bytes the endpoints hold at once; `maxInFlight` the requests handled at once (routes added to the
    /// router later, the issuer's, count too).
    public static func add(to router: Router<LookupRequestContext>, api: LookupAPI, metrics: ServiceMetrics,
                           verifier: (any PrivateTokenVerifier)?, budget: AdmissionBudget = .bodies(capacity: 256 << 20),
                           maxInFlight: Int = 256, maxPerUser: Int = 4) {
        router.add(middleware: RequestObserverMiddleware(metrics: metrics))
        router.add(middleware: InFlightLimitMiddleware(limit: maxInFlight))
        let pir = router.group()
        pir.add(middleware: PerUserLimitMiddleware(limit: maxPerUser))
        if let verifier { pir.add(middleware: PrivateTokenMiddleware(verifier: verifier)) }
        pir.add(middleware: UserIdentifierMiddleware())
        pir.add(middleware: UserAgentMiddleware())
        pir.post("/config") { request, context -> Response in
            try await budget.with(reservation(request, context)) {
                let message = try await decode(ProtoConfigRequest.self, request, context)
                let answer = try await api.config(message, user: try user(context), features: context.features)
                return try protobufResponse(answer, gzip: acceptsGzip(request))
            }
        }
        pir.post("/key") { request, context -> Response in
            try await budget.with(reservation(request, context)) {
                let message = try await decode(ProtoEvaluationKeys.self, request, context)
                try await api.uploadKeys(message, user: try user(context))
                return Response(status: .ok)
            }
        }
        pir.post("/queries") { request, context -> Response in
            try await budget.with(reservation(request, context)) {
                let message = try await decode(ProtoRequests.self, request, context)
                let answer = try await api.queries(message, user: try user(context))
                return try protobufResponse(answer)
            }
        }
    }

    /// The bytes a request's body may take: its declared length within the limit, or the limit when it has none
    /// (a longer declared length is refused with 413 by `decode` without reserving).
    static func reservation(_ request: Request, _ context: LookupRequestContext) -> Int {
        min(request.headers[.contentLength].flatMap { Int($0) } ?? context.maxUploadSize, context.maxUploadSize)
    }

    static func user(_ context: LookupRequestContext) throws -> String {
        guard let user = context.userIdentifier else { throw LookupError.badRequest("Missing 'User-Identifier' header") }
        return user
    }

    static func decode<M: Message>(_ type: M.Type, _ request: Request, _ context: LookupRequestContext) async throws -> M {
        let bytes = try await body(request, limit: context.maxUploadSize)
        do {
            return try M(serializedBytes: bytes)
        } catch {
            throw LookupError.badRequest("Malformed \(M.protoMessageName): \(error)")
        }
    }

    /// The request's body, at most `limit` bytes: a longer declared length is refused before reading, a longer
    /// body while reading (413 either way).
    static func body(_ request: Request, limit: Int) async throws -> [UInt8] {
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw LookupError(.contentTooLarge, "Request body of \(length) bytes exceeds \(limit) bytes")
        }
        do { return Array(try await request.body.collect(upTo: limit).readableBytesView) } catch is NIOTooManyBytesError {
            throw LookupError(.contentTooLarge, "Request body exceeds \(limit) bytes")
        }
    }

    static func protobufResponse(_ message: some Message, gzip: Bool = false) throws -> Response {
        let bytes: [UInt8] = try message.serializedBytes()
        var headers = HTTPFields()  // the reference sends protobuf answers without Content-Type
        var body = bytes
        if gzip {
            body = try Gzip.compress(bytes)
            headers[.contentEncoding] = "gzip"
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// Whether `Accept-Encoding` lists gzip (without `q=0`).
    static func acceptsGzip(_ request: Request) -> Bool {
        guard let value = request.headers[.acceptEncoding] else { return false }
        return value.split(separator: ",").contains { item in
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            return parts.first?.lowercased() == "gzip" && !parts.dropFirst().contains { $0.replacingOccurrences(of: " ", with: "") == "q=0" }
        }
    }
}
