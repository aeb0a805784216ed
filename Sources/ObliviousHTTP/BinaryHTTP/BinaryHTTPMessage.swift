/// What Binary HTTP requests and responses share: header fields, content and trailers.
public protocol BinaryHTTPMessage {
    /// Header fields in order.
    var headers: [BinaryHTTPField] { get }
    /// The content.
    var content: [UInt8] { get }
    /// Trailer fields.
    var trailers: [BinaryHTTPField] { get }
}

extension BinaryHTTPMessage {
    /// The first header field named `name` (lowercase).
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
}
