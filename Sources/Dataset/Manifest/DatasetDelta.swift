import LookupProtocol
import PIR

/// A change to a processed version: CSV lines `add,keyword,value`, `change,keyword,value`, `set,keyword,value` (add
/// or change, whichever the keyword needs: how a block-list publisher states a decision) and `remove,keyword`
/// (value in hex or base64, as in the keyword CSV; an `op,…` header on line 1 is skipped). A shard is normally
/// updated in place (`DatasetBuilder.updateInPlace`); one laid out afresh gets the delta applied to its rows:
/// removals and changes where the rows are, additions appended in file order.
public struct DatasetDelta: Sendable {
    /// What a line does to its keyword.
    public enum Operation: Sendable, Equatable {
        /// A new keyword with its value.
        case add([UInt8])
        /// A present keyword's new value.
        case change([UInt8])
        /// A keyword's value, whether or not it is present (an add or a change).
        case set([UInt8])
        /// A present keyword taken out.
        case remove
    }

    /// One line of the delta.
    public struct Entry: Sendable, Equatable {
        /// `KeywordHash.hash(keyword)`.
        public let hash: UInt64
        /// 1-based line in the delta file.
        public let line: Int
        /// The operation.
        public let operation: Operation

        /// Throws unless the line fits a version where its keyword is `present` (or not): add only a new keyword,
        /// change or remove only an existing one.
        func check(present: Bool) throws {
            switch (operation, present) {
            case (.add, true): throw DatasetError.deltaConflict(line: line, why: "adds a keyword the previous version has (use change)")
            case (.change, false), (.remove, false):
                throw DatasetError.deltaConflict(line: line, why: "names a keyword the previous version does not have")
            default: return
            }
        }
    }

    /// The entries in file order, at most one per keyword.
    public let entries: [Entry]
    /// The delta file's size and SHA-256.
    public let input: DatasetManifest.Input

    /// Reads and checks a delta file; malformed lines and repeated keywords are reported with their line numbers.
    public static func read(path: String) throws -> DatasetDelta {
        var reader = try LineReader(path: path)
        var entries: [Entry] = []
        var problems: [DatasetError.LineProblem] = []
        var seen: [UInt64: Int] = [:]
        let input = try reader.forEachLine { line, bytes in
            if bytes.isEmpty { return }
            let fields = bytes.split(separator: 44, omittingEmptySubsequences: false)
            let op = String(decoding: fields[0], as: UTF8.self)
            if line == 1, op == "op" { return }
            func problem(_ why: String) {
                if problems.count < KeywordRowSource.keptProblems { problems.append(.init(line: line, why: why)) }
            }
            guard fields.count >= 2, !fields[1].isEmpty else { return problem("expected `add|change|remove,keyword[,value]`") }
            let operation: Operation
            switch op {
            case "add", "change", "set":
                guard fields.count == 3, let value = Optional(UnsafeBufferPointer(rebasing: fields[2])).flatMap({
                    [UInt8](hex: $0) ?? KeywordDatabaseFile.decodeBase64($0)
                }) else { return problem("\(op) needs a value in hex or base64") }
                guard value.count <= HashBucket.maxValueLength else { return problem("value of \(value.count) bytes exceeds 65535") }
                operation = op == "add" ? .add(value) : op == "set" ? .set(value) : .change(value)
            case "remove":
                guard fields.count == 2 || (fields.count == 3 && fields[2].isEmpty) else { return problem("remove takes no value") }
                operation = .remove
            default:
                return problem("unknown operation \"\(op.prefix(16))\" (add, change, set or remove)")
            }
            let hash = KeywordHash.hash(Array(fields[1]))
            if let first = seen[hash] { return problem("repeats the keyword of line \(first)") }
            seen[hash] = line
            entries.append(Entry(hash: hash, line: line, operation: operation))
        }
        guard problems.isEmpty else { throw DatasetError.malformedLines(problems) }
        return DatasetDelta(entries: entries, input: input)
    }

    /// Applies this delta's entries for one shard to that shard's rows (for a shard laid out afresh).
    static func apply(_ entries: [Entry], to rows: [ShardRow]) throws -> [ShardRow] {
        var position: [UInt64: Int] = [:]
        position.reserveCapacity(rows.count)
        for (i, row) in rows.enumerated() { position[row.hash] = i }
        var result: [ShardRow?] = rows
        for entry in entries {
            let line = UInt32(clamping: entry.line)
            let at = position[entry.hash]
            try entry.check(present: at != nil)
            switch entry.operation {
            case .add(let value):
                position[entry.hash] = result.count
                result.append(ShardRow(hash: entry.hash, line: line, value: value))
            case .change(let value):
                result[at!] = ShardRow(hash: entry.hash, line: line, value: value)
            case .set(let value):
                if let at { result[at] = ShardRow(hash: entry.hash, line: line, value: value) } else {
                    position[entry.hash] = result.count
                    result.append(ShardRow(hash: entry.hash, line: line, value: value))
                }
            case .remove:
                result[at!] = nil
                position[entry.hash] = nil
            }
        }
        return result.compactMap { $0 }
    }
}
