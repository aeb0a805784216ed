import ObliviousHTTP
import ServiceCore

/// Where the gateway sends the Binary HTTP requests it opened: the service in this process, or allow-listed
/// origins over HTTP. A target answers every request with a response (errors of the target become 5xx
/// responses), so the client always gets an encapsulated answer once its request opened.
public protocol GatewayTarget: Sendable {
    /// The response to `request`; `context` is the outer request's (its connection), never its logger.
    func forward(_ request: BinaryHTTPRequest, context: LookupRequestContext) async throws -> BinaryHTTPResponse
    /// Releases connections.
    func shutdown() async
}
