import Foundation

/// The media type of a `Content-Type` value without its parameters, lower-cased (`Application/JSON; charset=utf-8`
/// is `application/json`); nil when there is no header. One reading for every endpoint that checks media types.
package enum MediaType {
    package static func essence(_ contentType: String?) -> String? {
        guard let contentType else { return nil }
        // Every gateway request asks this, refused ones too: an ASCII value is read byte by byte, anything else
        // through Foundation's Unicode trimming and case mapping, which give the same for ASCII.
        guard contentType.utf8.allSatisfy({ $0 < 0x80 }) else { return foundationEssence(contentType) }
        // The first part between semicolons that is not empty, as `split(separator:)` reads it.
        guard var utf8 = contentType.utf8.split(separator: UInt8(ascii: ";")).first else { return nil }
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        while let first = utf8.first, blank(first) { utf8 = utf8.dropFirst() }
        while let last = utf8.last, blank(last) { utf8 = utf8.dropLast() }
        return String(decoding: utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// The reading for values with non-ASCII characters.
    package static func foundationEssence(_ contentType: String) -> String? {
        contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
    }
}
