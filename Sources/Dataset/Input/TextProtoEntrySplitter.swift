import LookupProtocol

/// Splits text-format `InputIdentities` into its top-level fields (one `identities { … }` map entry each) as the
/// lines go by, so a file of any size is parsed one entry at a time. It follows what the text format allows
/// around fields: `{ }` and `< >` nesting, `"…"` and `'…'` strings with backslash escapes (never across a line)
/// and `#` comments to the end of the line.
struct TextProtoEntrySplitter {
    private var pending: [UInt8] = []
    private var depth = 0
    private var firstLine = 1
    private var sawField = false

    /// Feeds one line (without its line break); calls `entry` with the text of each top-level field completed on
    /// it and the line the field started on. Unbalanced closing brackets are reported as a problem.
    mutating func feed(line number: Int, _ bytes: UnsafeBufferPointer<UInt8>,
                       entry: (Int, [UInt8]) throws -> Void) throws -> DatasetProblem? {
        var quote: UInt8? = nil
        var escaped = false
        var start = 0
        var end = bytes.count
        scan: for i in 0..<bytes.count {
            let c = bytes[i]
            if let q = quote {
                if escaped { escaped = false } else if c == 92 { escaped = true } else if c == q { quote = nil }
                continue
            }
            switch c {
            case 35:  // '#': the rest of the line is a comment
                end = i
                break scan
            case 34, 39: quote = c  // '"', '\''
            case 123, 60: depth += 1  // '{', '<'
            case 125, 62:  // '}', '>'
                depth -= 1
                if depth < 0 {
                    depth = 0
                    pending = []
                    sawField = false
                    return DatasetProblem(line: number, "unbalanced closing bracket")
                }
                if depth == 0 {
                    append(bytes, start..<(i + 1), line: number)
                    start = i + 1
                    try flushIfComplete(entry)
                }
            default:
                break
            }
        }
        append(bytes, start..<max(start, end), line: number)
        if sawField { pending.append(10) }
        return nil
    }

    /// Whether text is left that never closed (the file ended inside an entry).
    var unfinished: (line: Int, text: [UInt8])? {
        sawField ? (firstLine, pending) : nil
    }

    private mutating func append(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, line: Int) {
        let slice = UnsafeBufferPointer(rebasing: bytes[range])
        if !sawField, slice.contains(where: { $0 != 32 && $0 != 9 && $0 != 13 && $0 != 59 && $0 != 44 }) {  // not space, ';' or ','
            sawField = true
            firstLine = line
        }
        if sawField { pending.append(contentsOf: slice) }
    }

    private mutating func flushIfComplete(_ entry: (Int, [UInt8]) throws -> Void) throws {
        guard sawField, depth == 0 else { return }
        let text = pending
        pending = []
        sawField = false
        try entry(firstLine, text)
    }
}
