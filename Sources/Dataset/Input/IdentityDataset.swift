import LookupProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwiftProtobuf

/// One caller as the operator describes it: number, display data and block decision.
public struct IdentityRecord: Sendable, Equatable {
    /// E.164 number (`+` and digits).
    public var number: String
    /// Display name (empty for none).
    public var name: String
    /// Person, business or unspecified.
    public var category: IdentityCategory
    /// Whether calls from this number are blocked.
    public var block: Bool
    /// How long the device may reuse the identity answer.
    public var cacheExpiryMinutes: UInt32
    /// HEIC icon bytes, if any.
    public var icon: [UInt8]?

    /// A record.
    public init(number: String, name: String, category: IdentityCategory, block: Bool, cacheExpiryMinutes: UInt32, icon: [UInt8]? = nil) {
        self.number = number
        self.name = name
        self.category = category
        self.block = block
        self.cacheExpiryMinutes = cacheExpiryMinutes
        self.icon = icon
    }

    /// The block value: `[1]` to block the caller, `[0]` not to.
    public var blockValue: [UInt8] { [block ? 1 : 0] }

    /// The identity value: a serialized `CallIdentity`, or nil when it would be empty (no identity row).
    public func callIdentity() throws -> [UInt8]? {
        var identity = CallIdentity()
        identity.name = name
        identity.cacheExpiryMinutes = cacheExpiryMinutes
        identity.category = category
        if let icon { identity.icon = .with { $0.format = .heic; $0.image = Data(icon) } }
        let bytes: [UInt8] = try identity.serializedBytes()
        return bytes.isEmpty ? nil : bytes
    }
}

/// A problem with one input row; `line` is 1-based (nil for whole-file problems).
public struct DatasetProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// Line of the input, when known.
    public let line: Int?
    /// What is wrong.
    public let message: String

    /// A problem.
    public init(line: Int?, _ message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { line.map { "line \($0): \(message)" } ?? message }
}

/// Reading identity datasets (`build-db`, SPEC-PIR §7.10): text-format `InputIdentities` or CSV
/// `number,name,category,block,cache_minutes`, numbers normalized to E.164, icons from `<number>.heic`, and
/// the block and identity keyword databases. Every rejected row is reported with its line.
public enum IdentityDataset {
    /// Largest icon accepted.
    public static let maxIconBytes = 64 * 1024

    /// `+` and 7–15 digits after removing spaces, `-`, `.`, `(` and `)`; nil for anything else.
    public static func normalize<S: StringProtocol>(_ raw: S) -> String? {
        // After trimming, only '+' (first), ASCII digits and the separators " -.()" may occur: any other scalar
        // (a letter, a combining mark, another space) makes the text not a number.
        var out: [UInt8] = []
        out.reserveCapacity(16)
        for scalar in CSVField.trimmed(raw).unicodeScalars {
            switch scalar {
            case " ", "-", ".", "(", ")": continue
            case "+" where out.isEmpty: out.append(UInt8(ascii: "+"))
            case "0"..."9" where !out.isEmpty:
                if out.count == 1, scalar == "0" { return nil }
                out.append(UInt8(scalar.value))
                if out.count > 16 { return nil }
            default: return nil
            }
        }
        guard out.count >= 8 else { return nil }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses CSV rows (a header line starting with `number` is skipped). Returns the records and the problems.
    public static func parseCSV(_ text: String) -> (records: [IdentityRecord], problems: [DatasetProblem]) {
        var records: [IdentityRecord] = []
        var problems: [DatasetProblem] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            switch parseCSVLine(line, lineNumber: index + 1) {
            case .success(let record?): records.append(record)
            case .success(nil): continue
            case .failure(let problem): problems.append(problem)
            }
        }
        return (records, problems)
    }

    /// Parses one CSV line (without its line break): a record, nothing (empty line or header), or a problem.
    public static func parseCSVLine(_ line: Substring, lineNumber: Int) -> Result<IdentityRecord?, DatasetProblem> {
        if CSVField.trimmed(line).isEmpty { return .success(nil) }
        if lineNumber == 1, line.lowercased().hasPrefix("number") { return .success(nil) }
        let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { String(CSVField.trimmed($0)) }
        guard fields.count == 5 else {
            return .failure(DatasetProblem(line: lineNumber, "expected 5 fields (number,name,category,block,cache_minutes), found \(fields.count)"))
        }
        guard let number = normalize(fields[0]) else {
            return .failure(DatasetProblem(line: lineNumber, "\"\(fields[0])\" is not an E.164 number"))
        }
        guard let category = category(fields[2]) else {
            return .failure(DatasetProblem(line: lineNumber, "unknown category \"\(fields[2])\""))
        }
        guard let block = flag(fields[3]) else {
            return .failure(DatasetProblem(line: lineNumber, "block must be 0/1/true/false, found \"\(fields[3])\""))
        }
        guard let minutes = fields[4].isEmpty ? 0 : UInt32(fields[4]) else {
            return .failure(DatasetProblem(line: lineNumber, "cache_minutes must be a non-negative integer, found \"\(fields[4])\""))
        }
        return .success(IdentityRecord(number: number, name: fields[1], category: category, block: block, cacheExpiryMinutes: minutes))
    }

    /// Parses text-format `InputIdentities` (the reference tool's input).
    public static func parseTextProto(_ text: String) -> (records: [IdentityRecord], problems: [DatasetProblem]) {
        let input: InputIdentities
        do { input = try InputIdentities(textFormatString: text) } catch {
            return ([], [DatasetProblem(line: nil, "not a text-format InputIdentities: \(error)")])
        }
        var records: [IdentityRecord] = []
        var problems: [DatasetProblem] = []
        for result in Self.records(of: input, line: nil) {
            switch result {
            case .success(let record): records.append(record)
            case .failure(let problem): problems.append(problem)
            }
        }
        return (records, problems)
    }

    /// The records of parsed `InputIdentities` in number order, or for each entry whose number is not E.164 a
    /// problem (on `line` when the entry's line is known).
    static func records(of input: InputIdentities, line: Int?) -> [Result<IdentityRecord, DatasetProblem>] {
        input.identities.sorted { $0.key < $1.key }.map { raw, value in
            guard let number = normalize(raw) else { return .failure(DatasetProblem(line: line, "\"\(raw)\" is not an E.164 number")) }
            return .success(IdentityRecord(number: number, name: value.name, category: value.category, block: value.block,
                                           cacheExpiryMinutes: value.cacheExpiryMinutes))
        }
    }

    /// Attaches `<directory>/<number>.heic` icons; icons over `maxIconBytes` are reported and not attached.
    public static func attachIcons(_ records: inout [IdentityRecord], directory: String) -> [DatasetProblem] {
        var problems: [DatasetProblem] = []
        for i in records.indices {
            let path = "\(directory)/\(records[i].number).heic"
            guard FileManager.default.fileExists(atPath: path) else { continue }
            guard let data = FileManager.default.contents(atPath: path) else {
                problems.append(DatasetProblem(line: nil, "\(path): cannot read the icon"))
                continue
            }
            if data.count > maxIconBytes {
                problems.append(DatasetProblem(line: nil, "\(path): icon of \(data.count) bytes exceeds \(maxIconBytes)"))
            } else {
                records[i].icon = [UInt8](data)
            }
        }
        return problems
    }

    /// Reports numbers that occur more than once (after normalization).
    public static func duplicates(_ records: [IdentityRecord]) -> [DatasetProblem] {
        var seen: [String: Int] = [:]
        var problems: [DatasetProblem] = []
        for (index, record) in records.enumerated() {
            if let first = seen[record.number] {
                problems.append(DatasetProblem(line: nil, "\(record.number) appears more than once (records \(first + 1) and \(index + 1))"))
            } else {
                seen[record.number] = index
            }
        }
        return problems
    }

    /// The block database (one row per number, value `[1]` or `[0]`) and the identity database (rows only for
    /// non-empty identities, value a serialized `CallIdentity`). Keywords are the UTF-8 numbers.
    public static func keywordDatabases(_ records: [IdentityRecord]) throws -> (block: ProtoKeywordDatabase, identity: ProtoKeywordDatabase) {
        var block = ProtoKeywordDatabase()
        var identity = ProtoKeywordDatabase()
        for record in records {
            block.rows.append(.with {
                $0.keyword = Data(record.number.utf8)
                $0.value = Data(record.blockValue)
            })
            if let value = try record.callIdentity() {
                identity.rows.append(.with {
                    $0.keyword = Data(record.number.utf8)
                    $0.value = Data(value)
                })
            }
        }
        return (block, identity)
    }

    static func category(_ text: String) -> IdentityCategory? {
        switch text.uppercased() {
        case "", "0", "UNSPECIFIED", "IDENTITY_CATEGORY_UNSPECIFIED": return .unspecified
        case "1", "PERSON", "IDENTITY_CATEGORY_PERSON": return .person
        case "2", "BUSINESS", "IDENTITY_CATEGORY_BUSINESS": return .business
        default: return nil
        }
    }

    static func flag(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "1", "true", "yes": return true
        case "0", "false", "no", "": return false
        default: return nil
        }
    }
}
