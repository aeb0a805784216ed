import Hummingbird
import NIOCore

/// The gateway's routes: `GET` of the key configurations (`application/ohttp-keys`, RFC 9458 §3) and `POST` of
/// encapsulated requests (`message/ohttp-req` → `message/ohttp-res`), each body's bytes held within `budget`.
public enum ObliviousGatewayRoutes {
    /// Adds the gateway at `keysPath` and `requestPath` of `router`.
    public static func add(to router: Router<LookupRequestContext>, gateway: ObliviousGateway, keysPath: String, requestPath: String,
                           budget: AdmissionBudget = .bodies(capacity: 256 << 20)) {
        router.get(RouterPath(keysPath)) { _, _ -> Response in
            let configs = gateway.keys.publishedConfigs
            guard gateway.keys.gateway != nil else { throw LookupError.unavailable("The gateway has no key yet", retryAfter: 5) }
            var headers = HTTPFields()
            headers[.contentType] = ObliviousGateway.keysMediaType
            headers[.cacheControl] = "max-age=\(gateway.keys.cacheSeconds)"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: configs)))
        }
        router.post(RouterPath(requestPath)) { request, context -> Response in
            let limit = gateway.keys.maxRequestBytes
            let declared = request.headers[.contentLength].flatMap { Int($0) }
            if let declared, declared > limit { return answer(refuse(gateway, .tooLarge, limit)) }
            return try await budget.with(min(declared ?? limit, limit)) {
                let body: ByteBuffer
                do { body = try await request.body.collect(upTo: limit) } catch is NIOTooManyBytesError {
                    return answer(refuse(gateway, .tooLarge, limit))
                }
                return answer(await gateway.handle(Array(body.readableBytesView), contentType: request.headers[.contentType], context: context))
            }
        }
    }

    private static func refuse(_ gateway: ObliviousGateway, _ code: GatewayError.Code, _ limit: Int) -> ObliviousGateway.Answer {
        gateway.refused(GatewayError(code, "the encapsulated request exceeds \(limit) bytes"))
    }

    private static func answer(_ answer: ObliviousGateway.Answer) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = answer.contentType
        headers[.cacheControl] = "no-store"
        return Response(status: HTTPResponse.Status(code: answer.status), headers: headers,
                        body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}
