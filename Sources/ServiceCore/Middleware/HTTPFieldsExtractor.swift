import HTTPTypes
import Tracing

/// Reads trace context fields (`traceparent`, `tracestate`) from a request's headers.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { carrier[$0] }
    }
}
