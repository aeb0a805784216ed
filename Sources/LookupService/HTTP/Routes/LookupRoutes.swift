import Foundation
import Hummingbird
import LookupEngine
import LookupProtocol
import NIOCore
import ServiceCore
import SwiftProtobuf

/// The HTTP routes: the PIR endpoints behind their middleware chain (declared length → per-user limit → Privacy Pass →
/// User-Identifier → User-Agent, SPEC-PIR §7.3, all on headers; then the body, read within the port's body
/// budget; then a slot of the port's in-flight limit; `/config` gzip-encoded when accepted). `/healthz` and
/// `/metrics` are on the admin listener (`AdminRoutes`).
public enum LookupRoutes {
    /// Adds the public routes to `router`; `verifier` nil leaves the PIR endpoints unauthenticated; `bodies`
    /// bounds the body bytes held at once (port and connection); `inFlight` the requests handled at once (the
    /// other routes of the port share it); `perUser` and `gate` are shared by every router of the port. Nothing is
    /// reserved before the header checks.
    public static func add(to router: Router<LookupRequestContext>, api: LookupAPI, metrics: ServiceMetrics,
                           verifier: (any PrivateTokenVerifier)?,
                           bodies: BodyAdmissionMiddleware.Bounds = .init(budgetBytes: 256 << 20, perConnectionBytes: 64 << 20),
                           inFlight: InFlightLimitMiddleware = .init(limit: 256),
                           perUser: PerUserLimitMiddleware = .init(limit: 4), gate: FairAdmission? = nil) {
        router.add(middleware: RequestObserverMiddleware(metrics: metrics))
        // Three groups with the same chain: lookups take turns at the fair gate; `/config` (cheap) and `/key` (its
        // parse bounded by the compute pool's key lane) do not wait behind them; `/key` bodies are bounded by the
        // keys the loaded use cases can need (`KeyUploadBound`).
        func group(gated: Bool, bodyLimit: @escaping @Sendable () -> Int = { LookupRequestContext.maxBodyBytes }) -> RouterGroup<LookupRequestContext> {
            let pir = router.group()
            pir.add(middleware: DeclaredLengthMiddleware(limit: bodyLimit))
            pir.add(middleware: perUser)
            if gated, let gate { pir.add(middleware: FairAdmissionMiddleware(gate: gate, step: .precheck)) }
            if let verifier { pir.add(middleware: PrivateTokenMiddleware(verifier: verifier, metrics: metrics)) }
            pir.add(middleware: UserIdentifierMiddleware())
            pir.add(middleware: UserAgentMiddleware())
            pir.add(middleware: BodyAdmissionMiddleware(bounds: bodies, limit: bodyLimit, metrics: metrics))
            if gated, let gate { pir.add(middleware: FairAdmissionMiddleware(gate: gate, step: .turn)) }
            pir.add(middleware: inFlight)
            return pir
        }
        let pir = group(gated: false), lookups = group(gated: true)
        let keys = group(gated: false) { api.maxKeyUploadBytes }
        pir.post("/config") { request, context -> Response in
            let message = try await decode(ProtoConfigRequest.self, request, context)
            let answer = try await api.config(message, user: try user(context), features: context.features)
            return try protobufResponse(answer, gzip: acceptsGzip(request))
        }
        keys.post("/key") { request, context -> Response in
            let message = try await decode(ProtoEvaluationKeys.self, request, context)
            try await api.uploadKeys(message, user: try user(context))
            return Response(status: .ok)
        }
        lookups.post("/queries") { request, context -> Response in
            let message = try await decode(ProtoRequests.self, request, context)
            let answer = try await api.queries(message, user: try user(context))
            return try protobufResponse(answer)
        }
    }

    /// The routes that are not PIR endpoints (token issuer, reports, Call Directory, URL filter): their body read
    /// within `bodies` (at most `limit` bytes; each route checks its own, smaller limit), then a slot of `inFlight`.
    public static func openGroup(of router: Router<LookupRequestContext>, bodies: BodyAdmissionMiddleware.Bounds,
                                 inFlight: InFlightLimitMiddleware, metrics: ServiceMetrics, limit: Int = 1 << 20) -> RouterGroup<LookupRequestContext> {
        let group = router.group()
        group.add(middleware: BodyAdmissionMiddleware(bounds: bodies, limit: limit, metrics: metrics))
        group.add(middleware: inFlight)
        return group
    }

    static func user(_ context: LookupRequestContext) throws -> String {
        guard let user = context.userIdentifier else { throw LookupError.badRequest("Missing 'User-Identifier' header") }
        return user
    }

    /// The request's body parsed as `M`, read in place: the message copies the bytes it keeps, so the body is not
    /// copied first (a key upload's body is most of a megabyte, and the heap kept every such copy until idle).
    static func decode<M: Message>(_ type: M.Type, _ request: Request, _ context: LookupRequestContext) async throws -> M {
        let buffer = try await bodyBuffer(request, limit: context.maxUploadSize)
        do {
            return try buffer.withUnsafeReadableBytes { raw in
                guard let base = raw.baseAddress, !raw.isEmpty else { return try M(serializedBytes: [UInt8]()) }
                return try M(serializedBytes: Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: raw.count, deallocator: .none))
            }
        } catch {
            throw LookupError.badRequest("Malformed \(M.protoMessageName): \(error)")
        }
    }

    /// The request's body, at most `limit` bytes: a longer declared length is refused before reading, a longer
    /// body while reading (413 either way).
    static func body(_ request: Request, limit: Int) async throws -> [UInt8] {
        Array(try await bodyBuffer(request, limit: limit).readableBytesView)
    }

    /// The request's body as the buffer it was read into (no copy once `BodyAdmissionMiddleware` has collected it).
    static func bodyBuffer(_ request: Request, limit: Int) async throws -> ByteBuffer {
        if DeclaredLengthMiddleware.declaresMore(request, than: limit) { throw LookupError.contentTooLarge(limit: limit) }
        do { return try await request.body.collect(upTo: limit) } catch is NIOTooManyBytesError {
            throw LookupError.contentTooLarge(limit: limit)
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
