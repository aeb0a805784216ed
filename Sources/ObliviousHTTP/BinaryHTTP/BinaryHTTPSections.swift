/// The parts every Binary HTTP message shares (RFC 9292 §3): field sections and content, in the known-length
/// form (a length, then the bytes) or the indeterminate-length form (items up to a zero terminator), truncation
/// (a message may end where its header, content or trailer section begins; that section and the rest are then
/// empty) and zero padding.
enum BinaryHTTPSections {
    static func readFields(_ reader: inout ByteReader, indeterminate: Bool, limits: BinaryHTTPLimits) throws -> [BinaryHTTPField] {
        if indeterminate {
            var fields: [BinaryHTTPField] = []
            var total = 0
            while true {
                let name = try reader.lengthPrefixed(limit: limits.maxFieldBytes)
                if name.isEmpty { return fields }
                let value = try reader.lengthPrefixed(limit: limits.maxFieldBytes - name.count)
                total += name.count + value.count
                guard total <= limits.maxSectionBytes else { throw BinaryHTTPError(.tooLarge, "a field section exceeds \(limits.maxSectionBytes) bytes") }
                fields.append(try field(name, value))
                guard fields.count <= limits.maxFields else { throw BinaryHTTPError(.tooLarge, "more than \(limits.maxFields) fields") }
            }
        }
        var section = ByteReader(try reader.lengthPrefixed(limit: limits.maxSectionBytes))
        var fields: [BinaryHTTPField] = []
        while !section.isAtEnd {
            let name = try section.lengthPrefixed(limit: limits.maxFieldBytes)
            let value = try section.lengthPrefixed(limit: limits.maxFieldBytes - name.count)
            guard !name.isEmpty else { throw BinaryHTTPError(.invalidField, "an empty field name") }
            fields.append(try field(name, value))
            guard fields.count <= limits.maxFields else { throw BinaryHTTPError(.tooLarge, "more than \(limits.maxFields) fields") }
        }
        return fields
    }

    private static func field(_ name: [UInt8], _ value: [UInt8]) throws -> BinaryHTTPField {
        guard name.first != UInt8(ascii: ":") else { throw BinaryHTTPError(.invalidField, "a pseudo-field in a field section") }
        guard BinaryHTTPField.isValidName(name) else { throw BinaryHTTPError(.invalidField, "an invalid field name") }
        guard BinaryHTTPField.isValidValue(value) else { throw BinaryHTTPError(.invalidField, "an invalid field value") }
        return BinaryHTTPField(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    static func readContent(_ reader: inout ByteReader, indeterminate: Bool, limits: BinaryHTTPLimits) throws -> [UInt8] {
        guard indeterminate else { return try reader.lengthPrefixed(limit: limits.maxContentBytes) }
        var content: [UInt8] = []
        while true {
            let chunk = try reader.lengthPrefixed(limit: limits.maxContentBytes - content.count)
            if chunk.isEmpty { return content }
            content += chunk
        }
    }

    /// Content, trailers and padding after the header section; a message that ends where a section begins has
    /// that section (and the rest) empty.
    static func readTail(_ reader: inout ByteReader, indeterminate: Bool, limits: BinaryHTTPLimits) throws
        -> (content: [UInt8], trailers: [BinaryHTTPField]) {
        guard !reader.isAtEnd else { return ([], []) }
        let content = try readContent(&reader, indeterminate: indeterminate, limits: limits)
        guard !reader.isAtEnd else { return (content, []) }
        let trailers = try readFields(&reader, indeterminate: indeterminate, limits: limits)
        guard reader.rest().allSatisfy({ $0 == 0 }) else { throw BinaryHTTPError(.nonZeroPadding, "bytes after the message are not zero") }
        return (content, trailers)
    }

    /// The framing indicator: `known` or `indeterminate` (the two this message kind may have); whether the
    /// message uses indeterminate lengths.
    static func readFraming(_ reader: inout ByteReader, known: UInt64, indeterminate: UInt64, kind: String) throws -> Bool {
        let framing = try reader.varint()
        guard framing == known || framing == indeterminate else {
            throw BinaryHTTPError(.invalidFraming, "not a binary HTTP \(kind) (framing \(framing))")
        }
        return framing == indeterminate
    }

    /// The known-length header section, content and trailer section, padded to a multiple of `padding` bytes.
    static func appendTail(headers: [BinaryHTTPField], content: [UInt8], trailers: [BinaryHTTPField], padding: Int, to out: inout [UInt8]) {
        appendFields(headers, to: &out)
        Varint.appendLengthPrefixed(content, to: &out)
        appendFields(trailers, to: &out)
        pad(&out, to: padding)
    }

    static func appendFields(_ fields: [BinaryHTTPField], to out: inout [UInt8]) {
        var section: [UInt8] = []
        for field in fields {
            Varint.appendLengthPrefixed(Array(field.name.utf8), to: &section)
            Varint.appendLengthPrefixed(Array(field.value.utf8), to: &section)
        }
        Varint.appendLengthPrefixed(section, to: &out)
    }

    static func checkFields(_ fields: [BinaryHTTPField]) throws {
        for field in fields {
            let name = Array(field.name.utf8)
            guard name.first != UInt8(ascii: ":"), BinaryHTTPField.isValidName(name), BinaryHTTPField.isValidValue(Array(field.value.utf8)) else {
                throw BinaryHTTPError(.invalidField, "an invalid field")
            }
        }
    }

    /// `count` zero bytes of padding (RFC 9292 §3.8).
    static func pad(_ out: inout [UInt8], to multiple: Int) {
        guard multiple > 1, out.count % multiple != 0 else { return }
        out += [UInt8](repeating: 0, count: multiple - out.count % multiple)
    }

    /// Whether a control-data string (method, scheme, authority, path) is visible ASCII without spaces.
    static func isVisible(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F } }
}
