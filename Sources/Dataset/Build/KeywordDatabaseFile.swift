import Foundation
import LookupProtocol
import PIR

/// Reads keyword databases for processing: the protobuf `KeywordDatabase` (`.binpb`) and a CSV of
/// `keyword,value` lines where the value is hex or base64 (a `keyword,…` header line is skipped).
public enum KeywordDatabaseFile {
    /// Rows of the file at `path` (format from the extension: `.csv`, else protobuf).
    public static func read(path: String) throws -> [(keyword: [UInt8], value: [UInt8])] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DatasetError.unreadable(path: path, why: "no such file or not readable")
        }
        if path.hasSuffix(".csv") { return try parseCSV(String(decoding: data, as: UTF8.self)) }
        let database = try ProtoKeywordDatabase(serializedBytes: [UInt8](data))
        return database.rows.map { ([UInt8]($0.keyword), [UInt8]($0.value)) }
    }

    /// Parses CSV text: one `keyword,value` per line, value in hex or base64.
    public static func parseCSV(_ text: String) throws -> [(keyword: [UInt8], value: [UInt8])] {
        var rows: [(keyword: [UInt8], value: [UInt8])] = []
        // `\r\n` is one Character in Swift, so split on every newline character, not on "\n".
        for (i, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let parsed = Array(line.utf8).withUnsafeBufferPointer { parseLine($0, line: i + 1) }
            switch parsed {
            case .none: continue
            case .row(let keyword, let value): rows.append((keyword, value))
            case .problem(let why): throw DatasetError.malformedLines([.init(line: i + 1, why: why)])
            }
        }
        return rows
    }

    /// What one CSV line holds.
    public enum ParsedLine: Equatable {
        /// An empty line or the header.
        case none
        /// A row.
        case row(keyword: [UInt8], value: [UInt8])
        /// A malformed line, and why.
        case problem(String)
    }

    /// Parses one CSV line (without its line break): `keyword,value`, value in hex or base64; a `keyword,…`
    /// header on line 1 and empty lines are skipped.
    public static func parseLine(_ bytes: UnsafeBufferPointer<UInt8>, line: Int) -> ParsedLine {
        if bytes.isEmpty { return .none }
        let header = Array("keyword,".utf8)
        if line == 1, bytes.count >= header.count, Array(bytes[0..<header.count]) == header { return .none }
        guard let comma = bytes.firstIndex(of: 44), comma > 0, !bytes[(comma + 1)...].contains(44) else {
            return .problem("expected `keyword,value`")
        }
        let rest = UnsafeBufferPointer(rebasing: bytes[(comma + 1)...])
        guard let value = [UInt8](hex: rest) ?? decodeBase64(rest) else { return .problem("value is neither hex nor base64") }
        return .row(keyword: Array(bytes[0..<comma]), value: value)
    }

    static func decodeBase64(_ chars: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        Data(base64Encoded: Data(chars)).map { [UInt8]($0) }
    }
}
