import HTTPTypes
import Hummingbird
import Tracing

extension RequestObserverMiddleware {
    /// Runs the request in a server span named by its method and route (a bounded set), continuing a trace context
    /// the caller sent (`traceparent`); the stages the request passes through are its children. A request inside
    /// another (the gateway's inner request) is its child, and trace context the phone put in it is ignored.
    func traced(_ request: Request, route: String, tracer: any Tracer,
                _ body: () async throws -> Response) async throws -> Response {
        let parent: ServiceContext
        if let current = ServiceContext.current {
            parent = current
        } else {
            var context = ServiceContext.topLevel
            tracer.extract(request.headers, into: &context, using: HTTPFieldsExtractor())
            parent = context
        }
        return try await tracer.withSpan("\(request.method.rawValue) \(route)", context: parent, ofKind: .server) { span in
            span.attributes["http.request.method"] = request.method.rawValue
            span.attributes["http.route"] = route
            do {
                let response = try await body()
                span.attributes["http.response.status_code"] = Int(response.status.code)
                return response
            } catch let error as any HTTPResponseError {
                span.attributes["http.response.status_code"] = Int(error.status.code)
                if error.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
                throw error
            }
        }
    }
}
