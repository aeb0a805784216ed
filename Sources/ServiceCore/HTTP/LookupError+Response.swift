import Hummingbird
import NIOCore

extension LookupError: HTTPResponseError {
    /// The answer: the JSON body `{"error":{"message":…}}` that Hummingbird's `HTTPError` gives, byte for byte, with
    /// `Retry-After` on 503 and 429. Written directly rather than through `JSONEncoder`: under a flood most answers
    /// are refusals, and the encoder's generic machinery was a percent of the server's CPU.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }

    /// The answer, whatever the request.
    public var response: Response {
        let body = Self.jsonBody(message: message)
        var headers = HTTPFields()
        headers.reserveCapacity(3)
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.contentLength] = String(body.count)
        if status == .serviceUnavailable || status == .tooManyRequests { headers[.retryAfter] = String(max(retryAfter ?? 1, 1)) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `{"error":{"message":…}}` with `message` escaped as Foundation's `JSONEncoder` escapes it: `"`, `\` and `/`
    /// behind a backslash, `\b \t \n \f \r` by name, other control characters as `\u00xx`, the rest as UTF-8.
    package static func jsonBody(message: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(message.utf8.count + 32)
        out.append(contentsOf: #"{"error":{"message":""#.utf8)
        for byte in message.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out += [UInt8(ascii: "\\"), byte]
            case 0x08: out += Array(#"\b"#.utf8)
            case 0x09: out += Array(#"\t"#.utf8)
            case 0x0A: out += Array(#"\n"#.utf8)
            case 0x0C: out += Array(#"\f"#.utf8)
            case 0x0D: out += Array(#"\r"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: out.append(byte)
            }
        }
        out.append(contentsOf: #""}}"#.utf8)
        return out
    }
}
