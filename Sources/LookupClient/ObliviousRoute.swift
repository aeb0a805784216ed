import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ObliviousHTTP

/// Sends a client's requests through an Oblivious HTTP gateway (RFC 9458), as a device does through Apple's
/// relay: each request is Binary HTTP, encapsulated to the gateway's key configuration and posted as
/// `message/ohttp-req` to the gateway URL, which forwards it to the target and encapsulates the answer.
public struct ObliviousRoute: Sendable {
    /// Where encapsulated requests are posted (the gateway URL of Apple's form).
    public let gatewayURL: String
    /// The key configuration requests are encapsulated to.
    public let keyConfig: OHTTPKeyConfig

    /// A route through `gatewayURL` with `keyConfig`.
    public init(gatewayURL: String, keyConfig: OHTTPKeyConfig) {
        self.gatewayURL = gatewayURL
        self.keyConfig = keyConfig
    }

    /// Fetches the key configurations at `keysURL` (`application/ohttp-keys`) and routes through `gatewayURL`
    /// with the first one.
    public static func fetch(keysURL: String, gatewayURL: String, client: HTTPClient = .shared,
                             timeout: TimeAmount = .seconds(30)) async throws -> ObliviousRoute {
        let response = try await client.execute(HTTPClientRequest(url: keysURL), timeout: timeout)
        let body = Array(try await response.body.collect(upTo: 64 << 10).readableBytesView)
        guard response.status == .ok else {
            throw LookupClientError.answer(status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: body)
        }
        let configs: [OHTTPKeyConfig]
        do { configs = try OHTTPKeyConfig.decodeList(body) } catch {
            throw LookupClientError.protocolViolation("the gateway's key configurations do not parse: \(error)")
        }
        guard let config = configs.first else {
            throw LookupClientError.protocolViolation("the gateway published no key configuration")
        }
        return ObliviousRoute(gatewayURL: gatewayURL, keyConfig: config)
    }

    /// One exchange with the target at `targetURL` + `path`, through the gateway.
    func exchange(client: HTTPClient, targetURL: String, method: HTTPMethod, path: String, headers: [(String, String)],
                  body: [UInt8]?, timeout: TimeAmount, maxResponseBytes: Int) async throws
        -> (status: Int, headers: [(String, String)], body: [UInt8], wire: (request: Int, response: Int)) {
        let target = URL(string: targetURL)
        let authority = target.map { url in url.host.map { host in url.port.map { "\(host):\($0)" } ?? host } ?? "" } ?? ""
        var fields = headers.map { BinaryHTTPField($0.0.lowercased(), $0.1) }
        if body != nil, !fields.contains(where: { $0.name == "content-type" }) {
            fields.append(BinaryHTTPField("content-type", "application/octet-stream"))
        }
        let inner = BinaryHTTPRequest(method: method.rawValue, scheme: target?.scheme ?? "https", authority: authority,
                                      path: (target?.path ?? "") + path, headers: fields, content: body ?? [])
        let sealed = try OHTTPClientRequest(try inner.encoded(), config: keyConfig)
        var request = HTTPClientRequest(url: gatewayURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "message/ohttp-req")
        request.body = .bytes(ByteBuffer(bytes: sealed.encapsulated))
        let response = try await client.execute(request, timeout: timeout)
        let answer = Array(try await response.body.collect(upTo: maxResponseBytes + 4096).readableBytesView)
        guard response.status == .ok else {
            throw LookupClientError.answer(status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: answer)
        }
        let opened: BinaryHTTPResponse
        do { opened = try BinaryHTTPResponse(decoding: try sealed.openResponse(answer)) } catch {
            throw LookupClientError.protocolViolation("the gateway's encapsulated answer does not open: \(error)")
        }
        return (opened.status, opened.headers.map { ($0.name, $0.value) }, opened.content, (sealed.encapsulated.count, answer.count))
    }
}
