import Foundation
import PIR

/// Reads keyword databases for processing: the protobuf `KeywordDatabase` (`.binpb`) and a CSV of
/// `keyword,value` lines where the value is hex or base64 (a `keyword,…` header line is skipped).
public enum KeywordDatabaseFile {
    /// Errors reading a database file, with the line they come from.
    public enum ReadError: Error, Equatable, CustomStringConvertible {
        case unreadable(String)
        case malformedLine(line: Int, why: String)

        public var description: String {
            switch self {
            case .unreadable(let why): return "cannot read keyword database: \(why)"
            case let .malformedLine(line, why): return "line \(line): \(why)"
            }
        }
    }

    /// Rows of the file at `path` (format from the extension: `.csv`, else protobuf).
    public static func read(path: String) throws -> [(keyword: [UInt8], value: [UInt8])] {
        guard let data = FileManager.default.contents(atPath: path) else { throw ReadError.unreadable(path) }
        if path.hasSuffix(".csv") { return try parseCSV(String(decoding: data, as: UTF8.self)) }
        let database = try ProtoKeywordDatabase(serializedBytes: [UInt8](data))
        return database.rows.map { ([UInt8]($0.keyword), [UInt8]($0.value)) }
    }

    /// Parses CSV text: one `keyword,value` per line, value in hex or base64.
    public static func parseCSV(_ text: String) throws -> [(keyword: [UInt8], value: [UInt8])] {
        var rows: [(keyword: [UInt8], value: [UInt8])] = []
        // `\r\n` is one Character in Swift, so split on every newline character, not on "\n".
        for (i, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            if line.isEmpty { continue }
            if i == 0, line.hasPrefix("keyword,") { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count == 2, !fields[0].isEmpty else {
                throw ReadError.malformedLine(line: i + 1, why: "expected `keyword,value`")
            }
            guard let value = decodeValue(String(fields[1])) else {
                throw ReadError.malformedLine(line: i + 1, why: "value is neither hex nor base64")
            }
            rows.append((Array(fields[0].utf8), value))
        }
        return rows
    }

    /// Hex when the text is an even number of hex digits, else base64.
    static func decodeValue(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        if chars.count % 2 == 0, chars.allSatisfy({ nibble($0) != nil }) {
            return stride(from: 0, to: chars.count, by: 2).map { (nibble(chars[$0]) ?? 0) << 4 | (nibble(chars[$0 + 1]) ?? 0) }
        }
        return Data(base64Encoded: text).map { [UInt8]($0) }
    }
}

extension Apple_SwiftHomomorphicEncryption_Pir_V1_PirParameters {
    /// The per-shard parameters file as the reference's processing tool writes it.
    public init(_ parameters: MulPirParameters, sharding: ShardingFunction, keyConfig: EvaluationKeyConfigMessage) {
        self.init()
        encryptionParameters = .init(parameters.encryption)
        numEntries = UInt64(parameters.entryCount)
        entrySize = UInt64(parameters.entrySize)
        dimensions = parameters.dimensions.map { UInt64($0) }
        keywordPirParams = .with {
            $0.numHashFunctions = UInt64(parameters.batchSize)
            $0.shardingFunction = .init(sharding)
        }
        algorithm = .mulPir
        batchSize = UInt64(parameters.batchSize)
        evaluationKeyConfig = keyConfig
    }
}

/// The generated `EvaluationKeyConfig` message.
public typealias EvaluationKeyConfigMessage = Apple_SwiftHomomorphicEncryption_V1_EvaluationKeyConfig
