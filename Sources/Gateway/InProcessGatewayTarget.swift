import Hummingbird
import HTTPTypes
import Logging
import NIOCore
import ObliviousHTTP
import ServiceCore

/// The target of a gateway co-located with the service: the inner request is handed to the service's router in
/// this process (its middleware included: tokens, limits, metrics), with no socket in between.
public struct InProcessGatewayTarget: GatewayTarget {
    let responder: RouterResponder<LookupRequestContext>
    /// Inner requests log without the outer request's id, so logs never link the two.
    let innerLogger: Logger
    /// Largest response body passed back.
    let maxResponseBytes: Int

    /// A target answering through `router` (the PIR endpoints and the issuer, not the gateway itself).
    public init(router: Router<LookupRequestContext>, logger: Logger, maxResponseBytes: Int = 64 << 20) {
        responder = router.buildResponder()
        var inner = Logger(label: "callveil.gateway.inner")
        inner.logLevel = logger.logLevel
        innerLogger = inner
        self.maxResponseBytes = maxResponseBytes
    }

    public func forward(_ inner: BinaryHTTPRequest, context: LookupRequestContext) async throws -> BinaryHTTPResponse {
        let request = try Self.request(inner)
        let innerContext = LookupRequestContext(source: ApplicationRequestContextSource(channel: context.channel, logger: innerLogger))
        let response: Response
        do {
            response = try await responder.respond(to: request, context: innerContext)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: innerContext)
        }
        let collector = BodyCollector(limit: maxResponseBytes)
        try await response.body.write(collector.writer)
        var headers = response.headers.map { BinaryHTTPField($0.name.canonicalName, $0.value) }
        headers.removeAll { $0.name == "content-length" || $0.name == "transfer-encoding" }
        return BinaryHTTPResponse(status: Int(response.status.code), headers: headers, content: collector.bytes)
    }

    public func shutdown() async {}

    /// The Hummingbird request of a Binary HTTP one; a method or field Hummingbird would refuse is a bad request.
    static func request(_ inner: BinaryHTTPRequest) throws -> Request {
        var fields = HTTPFields()
        for field in inner.headers {
            guard let name = HTTPField.Name(field.name), HTTPField.isValidValue(field.value) else {
                throw GatewayError(.badInnerRequest, "a header field of the inner request is invalid")
            }
            guard name != .contentLength, name != .transferEncoding, name != .connection else { continue }
            fields.append(HTTPField(name: name, value: field.value))
        }
        fields[.contentLength] = String(inner.content.count)
        guard let method = HTTPRequest.Method(inner.method) else {
            throw GatewayError(.badInnerRequest, "the inner request's method is invalid")
        }
        guard inner.path.hasPrefix("/") else { throw GatewayError(.badInnerRequest, "the inner request's path must start with /") }
        let head = HTTPRequest(method: method, scheme: inner.scheme, authority: inner.authority, path: inner.path, headerFields: fields)
        return Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: inner.content)))
    }
}

/// Collects a response body in memory, refusing more than `limit` bytes.
struct BodyCollector {
    final class Sink: @unchecked Sendable {
        var bytes: [UInt8] = []
    }

    struct Writer: ResponseBodyWriter {
        let sink: Sink
        let limit: Int

        mutating func write(_ buffer: ByteBuffer) async throws {
            guard sink.bytes.count + buffer.readableBytes <= limit else {
                throw GatewayError(.targetFailed, "the response exceeds \(limit) bytes")
            }
            sink.bytes.append(contentsOf: buffer.readableBytesView)
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }

    private let sink = Sink()
    let limit: Int

    init(limit: Int) { self.limit = limit }

    var writer: Writer { Writer(sink: sink, limit: limit) }
    var bytes: [UInt8] { sink.bytes }
}
