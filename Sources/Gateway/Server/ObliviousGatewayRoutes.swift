import Hummingbird
import LookupEngine
import NIOCore
import ServiceCore

/// The gateway's routes: `GET` of the key configurations (`application/ohttp-keys`, RFC 9458 §3) and `POST` of
/// encapsulated requests (`message/ohttp-req` → `message/ohttp-res`). A request's body is read within `bodies`
/// (reserved as it arrives, per connection as well as for the port: the relay's few connections carry every
/// phone, and one of them must not hold the whole budget) and only then does it take a slot of `inFlight`.
public enum ObliviousGatewayRoutes {
    /// Adds the gateway at `keysPath` and `requestPath` of `router`.
    public static func add(to router: some RouterMethods<LookupRequestContext>, gateway: ObliviousGateway, keysPath: String, requestPath: String,
                           bodies: BodyAdmissionMiddleware.Bounds, inFlight: InFlightLimitMiddleware, metrics: ServiceMetrics? = nil) {
        router.get(RouterPath(keysPath)) { _, _ -> Response in
            let configs = gateway.keys.publishedConfigs
            guard gateway.keys.gateway != nil else { throw LookupError.unavailable("The gateway has no key yet", retryAfter: 5) }
            var headers = HTTPFields()
            headers[.contentType] = ObliviousGateway.keysMediaType
            headers[.cacheControl] = "max-age=\(gateway.keys.cacheSeconds)"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: configs)))
        }
        let limit = gateway.keys.kind.maxRequestBytes
        let requests = router.group()
        requests.add(middleware: BodyAdmissionMiddleware(bounds: bodies, limit: limit, metrics: metrics) { why in
            switch why {
            case .tooLarge: return answer(refuse(gateway, .tooLarge, limit))
            case .busy: return nil
            }
        })
        requests.add(middleware: inFlight)
        requests.post(RouterPath(requestPath)) { request, context -> Response in
            let body: ByteBuffer
            do { body = try await request.body.collect(upTo: limit) } catch is NIOTooManyBytesError {
                return answer(refuse(gateway, .tooLarge, limit))
            }
            return answer(await gateway.handle(Array(body.readableBytesView), contentType: request.headers[.contentType], context: context))
        }
    }

    private static func refuse(_ gateway: ObliviousGateway, _ code: GatewayError.Code, _ limit: Int) -> ObliviousGateway.Answer {
        gateway.refused(GatewayError(code, "the encapsulated request exceeds \(limit) bytes"))
    }

    private static func answer(_ answer: ObliviousGateway.Answer) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = answer.contentType
        headers[.cacheControl] = "no-store"
        if answer.status == 503 { headers[.retryAfter] = "1" }
        return Response(status: HTTPResponse.Status(code: answer.status), headers: headers,
                        body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}
