/// An HTTP response as Binary HTTP carries it (RFC 9292), inside an Oblivious HTTP response: informational (1xx)
/// responses, the final status, header fields, content and trailers. Decoded from both framings; encoded in the
/// known-length form.
public struct BinaryHTTPResponse: BinaryHTTPMessage, Sendable, Equatable {
    /// An informational response before the final one.
    public struct Informational: Sendable, Equatable {
        /// Its status, 100–199.
        public var status: Int
        /// Its fields.
        public var headers: [BinaryHTTPField]
    }

    /// Informational responses, in order.
    public var informational: [Informational]
    /// The final status, 200–599.
    public var status: Int
    /// Header fields in order.
    public var headers: [BinaryHTTPField]
    /// The content.
    public var content: [UInt8]
    /// Trailer fields.
    public var trailers: [BinaryHTTPField]

    /// A response.
    public init(status: Int, headers: [BinaryHTTPField] = [], content: [UInt8] = [], trailers: [BinaryHTTPField] = [],
                informational: [Informational] = []) {
        self.status = status
        self.headers = headers
        self.content = content
        self.trailers = trailers
        self.informational = informational
    }

    /// Decodes a response in either framing; every length and field is checked against `limits` before use.
    public init(decoding bytes: [UInt8], limits: BinaryHTTPLimits = .init()) throws {
        var reader = ByteReader(bytes)
        let indeterminate = try BinaryHTTPSections.readFraming(&reader, known: 1, indeterminate: 3, kind: "response")
        var informational: [Informational] = []
        while true {
            let status = try reader.varint()
            guard (100...599).contains(status) else { throw BinaryHTTPError(.invalidControlData, "status \(status) is out of range") }
            // A final response may be truncated from its header section on (RFC 9458's example is `0140c8`).
            let headers = status >= 200 && reader.isAtEnd ? []
                : try BinaryHTTPSections.readFields(&reader, indeterminate: indeterminate, limits: limits)
            if status < 200 {
                informational.append(Informational(status: Int(status), headers: headers))
                guard informational.count <= limits.maxInformational else {
                    throw BinaryHTTPError(.tooLarge, "more than \(limits.maxInformational) informational responses")
                }
                continue
            }
            let (content, trailers) = try BinaryHTTPSections.readTail(&reader, indeterminate: indeterminate, limits: limits)
            self.init(status: Int(status), headers: headers, content: content, trailers: trailers, informational: informational)
            return
        }
    }

    /// The known-length encoding, zero-padded to a multiple of `padding` bytes when it is above 1.
    public func encoded(padding: Int = 0) throws -> [UInt8] {
        guard (200...599).contains(status), informational.allSatisfy({ (100...199).contains($0.status) }) else {
            throw BinaryHTTPError(.invalidControlData, "a status out of range")
        }
        try BinaryHTTPSections.checkFields(headers + trailers + informational.flatMap(\.headers))
        var out: [UInt8] = [1]
        for response in informational {
            Varint.append(UInt64(response.status), to: &out)
            BinaryHTTPSections.appendFields(response.headers, to: &out)
        }
        Varint.append(UInt64(status), to: &out)
        BinaryHTTPSections.appendTail(headers: headers, content: content, trailers: trailers, padding: padding, to: &out)
        return out
    }
}
