import AsyncHTTPClient
import Foundation
import LookupClient
import ObliviousHTTP
import Synchronization

/// How a workload reaches the service: through its Oblivious HTTP gateway, as Apple's relay forwards a phone's
/// requests (encapsulated, over a few long-lived connections: HTTP/2 with TLS), or directly.
final class WorkloadTransport: Sendable {
    /// One exchange's outcome: the (inner) status, `Retry-After`, body, and what failed when no answer came.
    struct Outcome: Sendable {
        var status: Int
        var retryAfter: String?
        var body: [UInt8]
        var failure: String?

        /// `Retry-After` in whole seconds, nil when absent or not a number.
        var retryAfterSeconds: Int? { retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
    }

    private let clients: [LookupHTTPClient]
    private let gateway: OHTTPKeyConfig?
    private let counter = Atomic<Int>(0)

    /// `connections` connection pools (each an HTTP/2 connection over TLS, HTTP/1.1 otherwise) to `baseURL`;
    /// requests are encapsulated to `gateway` when it is given.
    init(baseURL: String, connections: Int, ca: String?, gateway: OHTTPKeyConfig?) {
        var configuration = HTTPClient.Configuration.trusting(ca)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        clients = (0..<max(connections, 1)).map { _ in
            LookupHTTPClient(baseURL: baseURL, client: HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration))
        }
        self.gateway = gateway
    }

    func shutdown() async {
        for http in clients { try? await http.client.shutdown() }
    }

    /// POSTs `body` to `path` with `headers` (through the gateway when there is one); never throws: a failure is
    /// an outcome with status 0.
    func post(_ path: String, headers: [(String, String)], body: [UInt8]) async -> Outcome {
        let http = clients[counter.wrappingAdd(1, ordering: .relaxed).oldValue % clients.count]
        do {
            guard let gateway else {
                let (status, responseHeaders, answer) = try await http.exchange(path: path, headers: headers, body: body)
                return Outcome(status: status, retryAfter: responseHeaders.first { $0.0.lowercased() == "retry-after" }?.1, body: answer)
            }
            let inner = BinaryHTTPRequest(method: "POST", authority: "lookup.example", path: path,
                                          headers: headers.map { BinaryHTTPField($0.0.lowercased(), $0.1) }, content: body)
            let request = try OHTTPClientRequest(try inner.encoded(), config: gateway)
            let (status, outerHeaders, sealed) = try await http.exchange(path: "/ohttp-gateway", headers: [("Content-Type", "message/ohttp-req")],
                                                                         body: request.encapsulated)
            guard status == 200 else {  // the gateway itself refused (overload, bad request)
                return Outcome(status: status, retryAfter: outerHeaders.first { $0.0.lowercased() == "retry-after" }?.1, body: [],
                               failure: "gateway \(status)")
            }
            let response = try BinaryHTTPResponse(decoding: try request.openResponse(sealed))
            return Outcome(status: response.status, retryAfter: response.headers.first { $0.name.lowercased() == "retry-after" }?.value,
                           body: response.content)
        } catch {
            return Outcome(status: 0, retryAfter: nil, body: [], failure: String(describing: error))
        }
    }

    /// GET `path` directly (setup: key configurations).
    func get(_ path: String) async throws -> [UInt8] {
        let (status, body) = try await clients[0].send(method: .GET, path: path, headers: [], body: nil)
        guard status == 200 else { throw WorkloadError("GET \(path) answered \(status)") }
        return body
    }
}
