import LookupProtocol

/// Why a dataset could not be read, processed or updated, with a stable code for scripts and logs (in the style of
/// swift-certificates' `CertificateError`: compare codes, not messages). The description starts with the code's
/// name in brackets, `[dataset.malformed-lines] …`.
public struct DatasetError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case unreadable = "dataset.unreadable", malformedLines = "dataset.malformed-lines",
                 duplicateKeyword = "dataset.duplicate-keyword", badManifest = "dataset.bad-manifest",
                 deltaConflict = "dataset.delta-conflict", processing = "dataset.processing"
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// An input file could not be opened or read.
        public static let unreadable = Code(.unreadable)
        /// Lines that do not parse (at most 100 are kept, each with its line number).
        public static let malformedLines = Code(.malformedLines)
        /// A keyword (or its 64-bit hash) appears twice.
        public static let duplicateKeyword = Code(.duplicateKeyword)
        /// A manifest or a file it names is missing, damaged or inconsistent.
        public static let badManifest = Code(.badManifest)
        /// A delta line that cannot apply to the previous version.
        public static let deltaConflict = Code(.deltaConflict)
        /// Processing failed (parameters, placement, writing).
        public static let processing = Code(.processing)
    }

    /// One malformed input line.
    public struct LineProblem: Hashable, Sendable, CustomStringConvertible {
        /// 1-based line number.
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

    /// What went wrong.
    public let code: Code
    /// The malformed lines, for `malformedLines`; empty otherwise.
    public let problems: [LineProblem]
    /// The reason, with the code in brackets.
    public let description: String

    private init(_ code: Code, _ reason: String, problems: [LineProblem] = []) {
        self.code = code
        self.problems = problems
        description = "[\(code)] \(reason)"
    }

    /// An input file could not be opened or read.
    public static func unreadable(path: String, why: String) -> DatasetError {
        DatasetError(.unreadable, "cannot read \(path): \(why)")
    }

    /// Lines that do not parse.
    public static func malformedLines(_ problems: [LineProblem]) -> DatasetError {
        let shown = problems.prefix(20).map(\.description).joined(separator: "; ")
        return DatasetError(.malformedLines, "\(problems.count) malformed line(s)\(problems.count >= 100 ? " (first 100 kept)" : ""): \(shown)",
                            problems: problems)
    }

    /// A keyword (or its hash) on `line` repeats the one on `firstLine`.
    public static func duplicateKeyword(line: Int, firstLine: Int) -> DatasetError {
        DatasetError(.duplicateKeyword, "line \(line) repeats the keyword (or its 64-bit hash) of line \(firstLine)")
    }

    /// A manifest problem.
    public static func badManifest(_ why: String) -> DatasetError { DatasetError(.badManifest, why) }

    /// A delta line that cannot apply.
    public static func deltaConflict(line: Int, why: String) -> DatasetError {
        DatasetError(.deltaConflict, "delta line \(line): \(why)")
    }

    /// Processing failed.
    public static func processing(_ why: String) -> DatasetError { DatasetError(.processing, why) }
}
