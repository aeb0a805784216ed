import LookupProtocol
import PIR
import Foundation

/// Streams the rows of a keyword database file in one pass: a CSV of `keyword,value` lines (value in hex or
/// base64; a `keyword,…` header on line 1 is skipped) of any size, or the protobuf `KeywordDatabase` (`.binpb`,
/// read whole: protobuf messages are bounded by 2 GB by nature; use CSV beyond that).
public enum KeywordRowSource {
    /// Malformed lines kept for the report; the count goes on.
    static let keptProblems = 100

    /// Calls `body(line, keyword, value)` for every row and returns the input's size and SHA-256. Malformed
    /// lines do not stop the pass: the first 100 are thrown together at the end, with
    /// their line numbers. `progress` gets (bytes read, file size).
    public static func forEachRow(path: String, progress: (Int, Int) -> Void = { _, _ in },
                                  _ body: (Int, [UInt8], [UInt8]) throws -> Void) throws -> DatasetManifest.Input {
        if !path.hasSuffix(".csv") {
            guard let data = FileManager.default.contents(atPath: path) else { throw DatasetError.unreadable(path: path, why: "cannot read") }
            let database: ProtoKeywordDatabase
            do { database = try ProtoKeywordDatabase(serializedBytes: [UInt8](data)) } catch {
                throw DatasetError.unreadable(path: path, why: "not a KeywordDatabase: \(error)")
            }
            for (i, row) in database.rows.enumerated() { try body(i + 1, [UInt8](row.keyword), [UInt8](row.value)) }
            progress(data.count, data.count)
            return FileDigest.of(bytes: [UInt8](data)).input(path: path)
        }
        var reader = try LineReader(path: path)
        var problems: [DatasetError.LineProblem] = []
        let size = reader.size
        let input = try reader.forEachLine(progress: { progress($0, size) }) { line, bytes in
            switch KeywordDatabaseFile.parseLine(bytes, line: line) {
            case .none: break
            case .row(let keyword, let value): try body(line, keyword, value)
            case .problem(let why):
                if problems.count < keptProblems { problems.append(.init(line: line, why: why)) }
            }
        }
        guard problems.isEmpty else { throw DatasetError.malformedLines(problems) }
        return input
    }
}

extension KeywordRowSource {
    /// A keyword as a problem report shows it: the text when it is printable ASCII (a phone number), else hex.
    public static func describe(keyword: [UInt8]) -> String {
        keyword.allSatisfy({ (0x21...0x7e).contains($0) }) ? String(decoding: keyword, as: UTF8.self) : "0x" + keyword.hexString
    }
}

extension FileDigest {
    /// The digest as a manifest's input record.
    func input(path: String) -> DatasetManifest.Input { DatasetManifest.Input(path: path, bytes: bytes, sha256: sha256) }
}
