/// An HTTP request as Binary HTTP carries it (RFC 9292), inside an Oblivious HTTP request: control data, header
/// fields, content and trailers. Decoded from both framings (known and indeterminate length), with truncation
/// and padding; encoded in the known-length form.
public struct BinaryHTTPRequest: BinaryHTTPMessage, Sendable, Equatable {
    /// The method (`POST`).
    public var method: String
    /// The scheme (`https`).
    public var scheme: String
    /// The authority (`host:port`; may be empty).
    public var authority: String
    /// The path with query (`/queries`).
    public var path: String
    /// Header fields in order.
    public var headers: [BinaryHTTPField]
    /// The content.
    public var content: [UInt8]
    /// Trailer fields.
    public var trailers: [BinaryHTTPField]

    /// A request.
    public init(method: String, scheme: String = "https", authority: String = "", path: String, headers: [BinaryHTTPField] = [],
                content: [UInt8] = [], trailers: [BinaryHTTPField] = []) {
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.headers = headers
        self.content = content
        self.trailers = trailers
    }

    /// Decodes a request in either framing; every length and field is checked against `limits` before use.
    public init(decoding bytes: [UInt8], limits: BinaryHTTPLimits = .init()) throws {
        var reader = ByteReader(bytes)
        let indeterminate = try BinaryHTTPSections.readFraming(&reader, known: 0, indeterminate: 2, kind: "request")
        let method = try reader.lengthPrefixed(limit: 64)
        let scheme = try reader.lengthPrefixed(limit: 64)
        let authority = try reader.lengthPrefixed(limit: 1024)
        let path = try reader.lengthPrefixed(limit: limits.maxFieldBytes)
        guard !method.isEmpty, method.allSatisfy(BinaryHTTPField.isTokenByte) else {
            throw BinaryHTTPError(.invalidControlData, "an invalid method")
        }
        guard !scheme.isEmpty, BinaryHTTPSections.isVisible(scheme), BinaryHTTPSections.isVisible(authority) else {
            throw BinaryHTTPError(.invalidControlData, "an invalid scheme or authority")
        }
        guard !path.isEmpty, BinaryHTTPSections.isVisible(path) else { throw BinaryHTTPError(.invalidControlData, "an empty or invalid path") }
        // Truncation may begin as early as the header section (RFC 9458's example request has none).
        let headers = reader.isAtEnd ? [] : try BinaryHTTPSections.readFields(&reader, indeterminate: indeterminate, limits: limits)
        let (content, trailers) = try BinaryHTTPSections.readTail(&reader, indeterminate: indeterminate, limits: limits)
        self.init(method: String(decoding: method, as: UTF8.self), scheme: String(decoding: scheme, as: UTF8.self),
                  authority: String(decoding: authority, as: UTF8.self), path: String(decoding: path, as: UTF8.self),
                  headers: headers, content: content, trailers: trailers)
    }

    /// The known-length encoding, zero-padded to a multiple of `padding` bytes when it is above 1.
    public func encoded(padding: Int = 0) throws -> [UInt8] {
        guard !method.isEmpty, Array(method.utf8).allSatisfy(BinaryHTTPField.isTokenByte), !path.isEmpty,
              BinaryHTTPSections.isVisible(Array(path.utf8)), BinaryHTTPSections.isVisible(Array(scheme.utf8)),
              BinaryHTTPSections.isVisible(Array(authority.utf8)) else {
            throw BinaryHTTPError(.invalidControlData, "a request needs a method, a scheme and a path of visible characters")
        }
        try BinaryHTTPSections.checkFields(headers + trailers)
        var out: [UInt8] = [0]
        for part in [method, scheme, authority, path] { Varint.appendLengthPrefixed(Array(part.utf8), to: &out) }
        BinaryHTTPSections.appendTail(headers: headers, content: content, trailers: trailers, padding: padding, to: &out)
        return out
    }
}
