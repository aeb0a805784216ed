import ConformanceSupport
import Foundation
import Hummingbird
import LookupEngine
import ServiceCore
import Testing

/// The cheap pieces every refused request passes through: the JSON error body written without `JSONEncoder`, the
/// media type read without Foundation for ASCII values, and the metric series kept once made. Each must answer
/// exactly what the general path answers.
@Suite("Error answers, media types and metric series")
struct ErrorAnswerTests {
    private struct Body: Encodable {
        struct Message: Encodable { let message: String }
        let error: Message
    }

    private static func encoded(_ message: String) throws -> [UInt8] {
        Array(try JSONEncoder().encode(Body(error: .init(message: message))))
    }

    @Test("The error body is JSONEncoder's byte for byte: every control character, quotes, slashes, non-ASCII, random text")
    func jsonBodyMatchesEncoder() throws {
        var every = ""
        for value in 0..<0x80 { every.unicodeScalars.append(Unicode.Scalar(UInt8(value))) }
        var messages = ["", "Too many requests ahead of this one; retry later", every, "a/b\\c\"d", "é😀\u{2028}\u{FEFF}"]
        var rng = TestRandom()
        let alphabet = Array("\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f} \"\\/aZ09~\u{7f}é€😀")
        for _ in 0..<500 {
            messages.append(String((0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }))
        }
        for message in messages {
            #expect(LookupError.jsonBody(message: message) == (try Self.encoded(message)), "\(message.debugDescription)")
        }
    }

    @Test("503 and 429 answers carry Retry-After (at least 1 s), others not; content type and length are the encoder's")
    func answerHeaders() throws {
        let busy = LookupError.unavailable("Server busy", retryAfter: 0).response
        #expect(busy.status == .serviceUnavailable && busy.headers[.retryAfter] == "1")
        #expect(busy.headers[.contentType] == "application/json; charset=utf-8")
        #expect(busy.headers[.contentLength] == String(try Self.encoded("Server busy").count))
        let limited = LookupError.tooManyRequests("Slow down", retryAfter: 7).response
        #expect(limited.status == .tooManyRequests && limited.headers[.retryAfter] == "7")
        let bad = LookupError.badRequest("Unknown usecase").response
        #expect(bad.status == .badRequest && bad.headers[.retryAfter] == nil)
    }

    @Test("The media type of ASCII values is Foundation's reading: parameters, blanks, case, empty parts, random values")
    func mediaTypeMatchesFoundation() {
        var values = ["", ";", ";;x", " ;x", "Message/OHTTP-Req", " application/json ; charset=utf-8", "\ttext/plain\t",
                      "a;b;c", "   ", "x; ", "APPLICATION/X-PROTOBUF"]
        var rng = TestRandom()
        let alphabet = Array(" \t;/aA-+=zZ\"x\u{b}")
        for _ in 0..<2000 {
            values.append(String((0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }))
        }
        for value in values {
            #expect(MediaType.essence(value) == MediaType.foundationEssence(value), "\(value.debugDescription)")
        }
        #expect(MediaType.essence(nil) == nil)
        #expect(MediaType.essence(" Ünï/Cödé ; x") == "ünï/cödé")
    }

    @Test("Counts and durations recorded through kept series reach the exposition, one series per name and labels")
    func metricSeriesKept() {
        let metrics = ServiceMetrics()
        for _ in 0..<3 { metrics.recordRequest(route: "/queries", status: 503, duration: .milliseconds(2)) }
        metrics.recordRequest(route: "/queries", status: 200, duration: .milliseconds(30))
        metrics.increment("callveil_admission_refusals_total", dimensions: [("reason", "estimate")], by: 5)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains(#"callveil_http_requests_total{route="/queries",result="overloaded"} 3"#))
        #expect(text.contains(#"callveil_http_requests_total{route="/queries",result="ok"} 1"#))
        #expect(text.contains(#"callveil_admission_refusals_total{reason="estimate"} 5"#))
        #expect(text.contains(#"callveil_http_request_duration_seconds_count{route="/queries"} 4"#))
    }
}
