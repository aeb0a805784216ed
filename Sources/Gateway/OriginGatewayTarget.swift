import AsyncHTTPClient
import Foundation
import LookupEngine
import NIOCore
import NIOHTTP1
import ObliviousHTTP
import ServiceCore
import Tracing

/// The target of a stand-alone gateway: allow-listed origins over HTTP (HTTP/2 when an `https` origin offers
/// it). The inner request's `:authority` picks the target; an authority no target names goes to the default
/// target (one without `authority`) or is refused with an encapsulated 421. Nothing else is ever contacted.
public final class OriginGatewayTarget: GatewayTarget {
    private let targets: [ServiceConfig.Gateway.Target]
    private let client: HTTPClient
    private let timeout: TimeAmount
    private let maxResponseBytes: Int
    private let tracer: (any Tracer)?

    /// A target over `targets` (checked by `ServiceConfig.Gateway.validate`); with a `tracer`, each forwarded request
    /// carries the gateway's trace context so the target's spans join it.
    public init(targets: [ServiceConfig.Gateway.Target], timeoutSeconds: Double = 30, maxResponseBytes: Int = 64 << 20,
                tracer: (any Tracer)? = nil) {
        self.targets = targets
        self.tracer = tracer
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        // A connection that delivers nothing for the timeout fails its request and is closed, so an exchange given up
        // on (below) does not linger, and shutdown does not wait for it.
        configuration.timeout = .init(connect: .seconds(10), read: .milliseconds(Int64(timeoutSeconds * 1000)))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        timeout = .milliseconds(Int64(timeoutSeconds * 1000))
        self.maxResponseBytes = maxResponseBytes
    }

    /// The origin serving `authority`.
    func origin(for authority: String) -> String? {
        let wanted = authority.lowercased()
        return (targets.first { $0.authority?.lowercased() == wanted } ?? targets.first { $0.authority == nil })?.origin
    }

    static let hopByHop: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
                                        "content-length", "host"]
    /// Trace context a phone's inner request may carry: never forwarded, the gateway's own goes instead.
    static let traceFields: Set<String> = ["traceparent", "tracestate"]

    public func forward(_ inner: BinaryHTTPRequest, context: LookupRequestContext) async throws -> BinaryHTTPResponse {
        guard let origin = origin(for: inner.authority) else {
            throw GatewayError(.targetNotAllowed, "no target serves the requested origin")
        }
        guard inner.path.hasPrefix("/") else { throw GatewayError(.badInnerRequest, "the inner request's path must start with /") }
        var request = HTTPClientRequest(url: origin + inner.path)
        request.method = HTTPMethod(rawValue: inner.method)
        for field in inner.headers where !Self.hopByHop.contains(field.name) && !Self.traceFields.contains(field.name) {
            request.headers.add(name: field.name, value: field.value)
        }
        if let tracer, let context = ServiceContext.current {
            tracer.inject(context, into: &request.headers, using: HTTPHeadersInjector())
        }
        request.body = .bytes(ByteBuffer(bytes: inner.content))
        let response: HTTPClientResponse
        let body: ByteBuffer
        // The timeout bounds the whole exchange, the response body included: a target that stalls mid-body does
        // not pin the gateway's request (and its slot and body budget).
        let client = self.client, timeout = self.timeout, maxResponseBytes = self.maxResponseBytes, outgoing = request
        do {
            (response, body) = try await Deadline.run(.nanoseconds(timeout.nanoseconds),
                                                      expired: { GatewayError(.targetFailed, "the target did not answer in time") }) {
                let response = try await client.execute(outgoing, timeout: timeout)
                return (response, try await response.body.collect(upTo: maxResponseBytes))
            }
        } catch {
            throw GatewayError(.targetFailed, "the target did not answer")
        }
        let headers = response.headers.filter { !Self.hopByHop.contains($0.name.lowercased()) }
            .map { BinaryHTTPField($0.name.lowercased(), $0.value) }
        return BinaryHTTPResponse(status: Int(response.status.code), headers: headers, content: Array(body.readableBytesView))
    }

    public func shutdown() async {
        try? await client.shutdown()
    }
}
