import LookupProtocol
/// Why a dataset could not be read, processed or updated. Each case has a stable code for scripts and logs.
public enum DatasetError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An input file could not be opened or read.
    case unreadable(path: String, why: String)
    /// Input lines that are not rows; each with its 1-based line number (at most the first 100 are kept).
    case malformedLines([LineProblem])
    /// Two rows have the same keyword (or 64-bit keyword hash).
    case duplicateKeyword(line: Int, firstLine: Int)
    /// A manifest or a file it lists is missing, malformed or does not match its recorded size or SHA-256.
    case badManifest(String)
    /// A delta cannot be applied to the previous version (a removal of an absent keyword, an addition of a present one).
    case deltaConflict(line: Int, why: String)
    /// A row or shard cannot be processed (a value too large, a cuckoo table that cannot hold the shard).
    case processing(String)

    /// One malformed input line.
    public struct LineProblem: Equatable, Sendable, CustomStringConvertible {
        /// 1-based line number in the input file.
        public let line: Int
        /// What is wrong with it.
        public let why: String

        /// A problem on `line`.
        public init(line: Int, why: String) {
            self.line = line
            self.why = why
        }

        public var description: String { "line \(line): \(why)" }
    }

    /// A stable identifier of the error's kind.
    public var code: String {
        switch self {
        case .unreadable: return "dataset.unreadable"
        case .malformedLines: return "dataset.malformed-lines"
        case .duplicateKeyword: return "dataset.duplicate-keyword"
        case .badManifest: return "dataset.bad-manifest"
        case .deltaConflict: return "dataset.delta-conflict"
        case .processing: return "dataset.processing"
        }
    }

    public var description: String {
        switch self {
        case let .unreadable(path, why): return "[\(code)] cannot read \(path): \(why)"
        case .malformedLines(let problems):
            let shown = problems.prefix(20).map(\.description).joined(separator: "; ")
            return "[\(code)] \(problems.count) malformed line(s)\(problems.count >= 100 ? " (first 100 kept)" : ""): \(shown)"
        case let .duplicateKeyword(line, first): return "[\(code)] line \(line) repeats the keyword (or its 64-bit hash) of line \(first)"
        case .badManifest(let why): return "[\(code)] \(why)"
        case let .deltaConflict(line, why): return "[\(code)] delta line \(line): \(why)"
        case .processing(let why): return "[\(code)] \(why)"
        }
    }
}
