import LookupProtocol

/// Field handling for the CSV inputs, on Unicode scalars instead of Foundation: `trimmingCharacters(in:
/// .whitespaces)` bridged every field through `NSString` and was 40% of `build-db`'s time at 10 M rows.
package enum CSVField {
    /// Whether a scalar is in `CharacterSet.whitespaces`: a space separator (Unicode Zs), a tab, or U+200B (zero
    /// width space, Zs in the Unicode data Foundation's set was built from; checked over every scalar).
    @inline(__always)
    package static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 0x80 { return scalar == " " || scalar == "\t" }
        return scalar.value == 0x200B || scalar.properties.generalCategory == .spaceSeparator
    }

    /// The text without leading and trailing spaces and tabs (the same set as `CharacterSet.whitespaces`).
    package static func trimmed<S: StringProtocol>(_ text: S) -> Substring {
        let scalars = Substring(text).unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !isSpace($0) })!
        return Substring(scalars[first...last])
    }

    /// The fields of one CSV line as RFC 4180 quotes them: a field in double quotes may hold commas, and `""`
    /// inside it is one quote (`"Acme, Inc."`, `"The ""Best"" Pizza"`); spaces around a field are trimmed, inside
    /// quotes kept. Nil when a quote is not closed on the line or text follows a closing quote: a field with a
    /// line break inside quotes is not supported, since each row is one line.
    package static func split(_ line: Substring) -> [String]? {
        var fields: [String] = []
        var scalars = line.unicodeScalars[...]
        while true {
            while let first = scalars.first, isSpace(first) { scalars.removeFirst() }
            if scalars.first == "\"" {
                scalars.removeFirst()
                var field = String.UnicodeScalarView()
                var closed = false
                while let scalar = scalars.popFirst() {
                    if scalar == "\"" {
                        if scalars.first == "\"" { scalars.removeFirst(); field.append("\"") } else { closed = true; break }
                    } else {
                        field.append(scalar)
                    }
                }
                guard closed else { return nil }
                while let first = scalars.first, isSpace(first) { scalars.removeFirst() }
                fields.append(String(field))
                guard let next = scalars.popFirst() else { return fields }
                guard next == "," else { return nil }
            } else if let comma = scalars.firstIndex(of: ",") {
                fields.append(String(trimmed(Substring(scalars[..<comma]))))
                scalars = scalars[scalars.index(after: comma)...]
            } else {
                fields.append(String(trimmed(Substring(scalars))))
                return fields
            }
        }
    }
}
