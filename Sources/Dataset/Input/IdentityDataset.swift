import LookupProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PIR
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
    /// Largest icon file read.
    public static let maxIconBytes = 64 * 1024
    /// Largest serialized identity (name, category, expiry and icon together): the value one PIR row holds
    /// (`HashBucket.maxValueLength`). An icon of 65,536 bytes alone does not fit.
    public static let maxIdentityBytes = HashBucket.maxValueLength

    /// `+` and 7–15 digits after removing spaces, `-`, `.`, `(` and `)`; nil for anything else. With `region`, a
    /// number written without `+` is read as a national number of that region (an international prefix `00` or
    /// `011` as the start of an international one).
    public static func normalize<S: StringProtocol>(_ raw: S, region: DefaultRegion? = nil) -> String? {
        // After trimming, only '+' (first), ASCII digits and the separators " -.()" may occur: any other scalar
        // (a letter, a combining mark, another space) makes the text not a number.
        var out: [UInt8] = []
        out.reserveCapacity(16)
        var plus = false
        for scalar in CSVField.trimmed(raw).unicodeScalars {
            switch scalar {
            case " ", "-", ".", "(", ")": continue
            case "+" where out.isEmpty && !plus: plus = true
            case "0"..."9" where plus || region != nil:
                out.append(UInt8(scalar.value))
                if out.count > 20 { return nil }
            default: return nil
            }
        }
        if !plus {
            guard let region, let international = region.international(out) else { return nil }
            out = international
        }
        guard out.count >= 7, out.count <= 15, out.first != UInt8(ascii: "0") else { return nil }
        return "+" + String(decoding: out, as: UTF8.self)
    }

    /// Parses CSV rows (a header line starting with `number` is skipped). Returns the records and the problems.
    public static func parseCSV(_ text: String, region: DefaultRegion? = nil) -> (records: [IdentityRecord], problems: [DatasetProblem]) {
        var records: [IdentityRecord] = []
        var problems: [DatasetProblem] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            switch parseCSVLine(line, lineNumber: index + 1, region: region) {
            case .success(let record?): records.append(record)
            case .success(nil): continue
            case .failure(let problem): problems.append(problem)
            }
        }
        return (records, problems)
    }

    /// Parses one CSV line (without its line break): a record, nothing (empty line or header), or a problem.
    public static func parseCSVLine(_ line: Substring, lineNumber: Int, region: DefaultRegion? = nil) -> Result<IdentityRecord?, DatasetProblem> {
        if CSVField.trimmed(line).isEmpty { return .success(nil) }
        if lineNumber == 1, line.lowercased().hasPrefix("number") { return .success(nil) }
        guard let fields = CSVField.split(line) else {
            return .failure(DatasetProblem(line: lineNumber, "a quoted field is not closed, or text follows its closing quote (RFC 4180; a field may not span lines)"))
        }
        guard fields.count == 5 else {
            return .failure(DatasetProblem(line: lineNumber, "expected 5 fields (number,name,category,block,cache_minutes), found \(fields.count)"))
        }
        guard let number = normalize(fields[0], region: region) else {
            return .failure(DatasetProblem(line: lineNumber, "\"\(fields[0])\" is not an E.164 number" + (region == nil ? " (national numbers need --default-region)" : " nor a national number of the default region")))
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
        guard fields[1].utf8.count <= maxIdentityBytes - 16 else {
            return .failure(DatasetProblem(line: lineNumber, "\(number): a name of \(fields[1].utf8.count) bytes does not fit the \(maxIdentityBytes) bytes of a PIR row"))
        }
        return .success(IdentityRecord(number: number, name: fields[1], category: category, block: block, cacheExpiryMinutes: minutes))
    }

    /// Parses text-format `InputIdentities` (the reference tool's input).
    public static func parseTextProto(_ text: String, region: DefaultRegion? = nil) -> (records: [IdentityRecord], problems: [DatasetProblem]) {
        let input: InputIdentities
        do { input = try InputIdentities(textFormatString: text) } catch {
            return ([], [DatasetProblem(line: nil, "not a text-format InputIdentities: \(error)")])
        }
        var records: [IdentityRecord] = []
        var problems: [DatasetProblem] = []
        for result in Self.records(of: input, line: nil, region: region) {
            switch result {
            case .success(let record): records.append(record)
            case .failure(let problem): problems.append(problem)
            }
        }
        return (records, problems)
    }

    /// The records of parsed `InputIdentities` in number order, or for each entry whose number is not E.164 a
    /// problem (on `line` when the entry's line is known).
    static func records(of input: InputIdentities, line: Int?, region: DefaultRegion? = nil) -> [Result<IdentityRecord, DatasetProblem>] {
        input.identities.sorted { $0.key < $1.key }.map { raw, value in
            guard let number = normalize(raw, region: region) else { return .failure(DatasetProblem(line: line, "\"\(raw)\" is not an E.164 number")) }
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
                continue
            }
            var record = records[i]
            record.icon = [UInt8](data)
            let size = (try? record.callIdentity()?.count) ?? Int.max
            if size > maxIdentityBytes {
                let room = maxIdentityBytes - (size - data.count)
                problems.append(DatasetProblem(line: nil, "\(path): the icon of \(data.count) bytes makes \(record.number)'s identity \(size) bytes, over the \(maxIdentityBytes) a PIR row holds (about \(max(room, 0)) bytes of icon fit with its name)"))
            } else {
                records[i] = record
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
