import LookupProtocol
import Foundation
import PIR

/// A published list laid over a dataset's curated rows: every listed keyword answers `value` (for the block use
/// case, blocked), whatever the curated data says, and each keeps its curated value (nil when the curated data
/// lacks it) so that it gets that value back when it leaves the list. The curated data and the list are two inputs
/// of every version: a curated update (full or delta) changes the curated values and keeps the list applied, a
/// list update changes the list and keeps the curated values, so the answer is
/// `listed ? value : curated` whatever order the updates come in.
public struct DatasetOverlay: Codable, Sendable, Equatable {
    /// One listed keyword.
    public struct Entry: Codable, Sendable, Equatable {
        /// The keyword (for the block use case an E.164 number).
        public var keyword: String
        /// Its value in the curated data, hex; nil when the curated data does not have it.
        public var curated: String?

        /// An entry.
        public init(keyword: String, curated: String?) {
            self.keyword = keyword
            self.curated = curated
        }

        /// `KeywordHash.hash` of the keyword.
        var hash: UInt64 { KeywordHash.hash(Array(keyword.utf8)) }
        /// The curated value's bytes.
        var curatedValue: [UInt8]? { curated.flatMap { [UInt8](hex: $0.utf8) } }
    }

    /// The list's name (`blocking`).
    public var list: String
    /// The list version applied.
    public var version: Int
    /// The value every listed keyword answers, hex.
    public var value: String
    /// The listed keywords, ascending.
    public var entries: [Entry]

    /// An overlay.
    public init(list: String, version: Int, value: [UInt8], entries: [Entry]) {
        self.list = list
        self.version = version
        self.value = value.hexString
        self.entries = entries.sorted { $0.keyword < $1.keyword }
    }

    /// The forced value's bytes.
    public var forcedValue: [UInt8] { [UInt8](hex: value.utf8) ?? [] }

    /// The listed keywords.
    public var keywords: Set<String> { Set(entries.map(\.keyword)) }

    /// Each entry's index by its keyword's hash.
    var indexByHash: [UInt64: Int] { Dictionary(uniqueKeysWithValues: entries.enumerated().map { ($1.hash, $0) }) }

    /// The overlay's file bytes: pretty JSON, keys sorted.
    func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return [UInt8](try encoder.encode(self))
    }

    /// Reads an overlay file named by a manifest (checked against its size and SHA-256), and checks it.
    static func read(_ file: DatasetManifest.File, directory: String) throws -> DatasetOverlay {
        let bytes = try DatasetManifest.contents(of: file, directory: directory)
        let overlay: DatasetOverlay
        do { overlay = try JSONDecoder().decode(DatasetOverlay.self, from: Data(bytes)) } catch {
            throw DatasetError.badManifest("\(directory)/\(file.path) is not a dataset overlay: \(error)")
        }
        guard [UInt8](hex: overlay.value.utf8) != nil, overlay.version >= 0,
              overlay.entries.allSatisfy({ $0.curated == nil || $0.curatedValue != nil }),
              Set(overlay.entries.map(\.keyword)).count == overlay.entries.count else {
            throw DatasetError.badManifest("\(directory)/\(file.path): a value is not hex, a version is negative or a keyword repeats")
        }
        return overlay
    }
}
