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
}
