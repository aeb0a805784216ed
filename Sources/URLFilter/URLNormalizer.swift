import LookupProtocol
import Foundation

/// Puts a URL in the form `NEURLFilterManager` matches by default (Apple's `ParsingConfiguration`): without its
/// scheme and `www.` label, lower-cased (matching is case-insensitive), the host Punycoded, the rest (port, path,
/// query, fragment) kept as written. `https://www.Example.com/A?b=1` becomes `example.com/a?b=1`, which is the
/// keyword of the URL-filter PIR database and the item of its Bloom prefilter.
public enum URLNormalizer {
    /// Longest URL accepted, in UTF-8 bytes.
    public static let maxLength = 2048

    /// The normalized URL, or an error saying why it cannot be one.
    public static func normalize(_ raw: String) throws -> String {
        let text = raw.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { throw URLFilterError.badURL("empty URL") }
        guard text.utf8.count <= maxLength else { throw URLFilterError.badURL("URL longer than \(maxLength) bytes") }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else {
            throw URLFilterError.badURL("URL contains spaces or control characters")
        }
        var rest = Substring(text)
        if let range = rest.range(of: "://") {
            let scheme = rest[..<range.lowerBound]
            guard let first = scheme.first, first.isASCII, first.isLetter,
                  scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else {
                throw URLFilterError.badURL("malformed scheme")
            }
            rest = rest[range.upperBound...]
        }
        let authorityEnd = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let tail = rest[authorityEnd...]
        guard !authority.contains("@") else { throw URLFilterError.badURL("user information is not part of a filtered URL") }
        var host = authority
        var port = ""
        if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            let digits = authority[authority.index(after: colon)...]
            guard let number = Int(digits), number >= 1, number <= 65535, digits.allSatisfy(\.isASCII) else {
                throw URLFilterError.badURL("malformed port")
            }
            port = ":" + String(number)
        }
        var labels: [String] = []
        let lowered = String(host).precomposedStringWithCanonicalMapping.lowercased()
        for label in lowered.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty else { throw URLFilterError.badURL("empty label in host") }
            var ascii = String(label)
            if !label.allSatisfy(\.isASCII) {
                guard let code = Punycode.encode(String(label)) else { throw URLFilterError.badURL("host label cannot be Punycoded") }
                ascii = "xn--" + code
            }
            guard ascii.utf8.count <= 63, ascii.utf8.allSatisfy({ byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x5F
            }) else { throw URLFilterError.badURL("malformed host label") }
            labels.append(ascii)
        }
        if labels.count > 2, labels[0] == "www" { labels.removeFirst() }
        let name = labels.joined(separator: ".")
        guard name.utf8.count <= 253 else { throw URLFilterError.badURL("host longer than 253 bytes") }
        return name + port + tail.lowercased()
    }
}
