import LookupProtocol
import Foundation

/// A provider's URL list turned into what the URL-filter use case serves: the keyword database (each normalized
/// URL with the value `[1]`, as `NEURLFilterManager` expects) for `process-db`, and the Bloom prefilter the app
/// hands to the system, with its parameters. Malformed lines are reported with their line numbers; repeats (after
/// normalization) are kept once.
public struct URLFilterList: Sendable {
    /// The prefilter's description, written beside it as `prefilter.json` and served with it.
    public struct PrefilterInfo: Codable, Sendable, Equatable {
        /// SHA-256 of the prefilter bytes in hex: the `NEURLFilterPrefilter` tag and the download's version.
        public var tag: String
        /// `bitCount` of `NEURLFilterPrefilter`.
        public var bitCount: Int
        /// `hashCount`.
        public var hashCount: Int
        /// `murmurSeed`.
        public var murmurSeed: UInt32
        /// URLs in the filter.
        public var itemCount: Int
        /// The false-positive rate the filter was sized for.
        public var falsePositiveRate: Double
        /// The rate its final parameters predict.
        public var predictedFalsePositiveRate: Double
        /// Size of `prefilter.bin`.
        public var byteCount: Int
    }

    /// The normalized URLs, sorted, each once.
    public let urls: [String]

    /// The list from text: one URL per line; blank lines and lines starting with `#` are skipped.
    public init(text: String) throws {
        var seen = Set<String>()
        var problems: [String] = []
        for (i, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            do { seen.insert(try URLNormalizer.normalize(trimmed)) } catch let error as URLFilterError {
                if problems.count < 20 { problems.append("line \(i + 1): \(error.reason)") }
            }
        }
        guard problems.isEmpty else { throw URLFilterError.badURL(problems.joined(separator: "; ")) }
        urls = seen.sorted()
    }

    /// The keyword database: every URL with the value `[1]`.
    public func keywordDatabase() -> ProtoKeywordDatabase {
        var database = ProtoKeywordDatabase()
        database.rows = urls.map { url in .with { $0.keyword = Data(url.utf8); $0.value = Data([1]) } }
        return database
    }

    /// The Bloom prefilter of every URL, sized for `falsePositiveRate`.
    public func prefilter(falsePositiveRate: Double, murmurSeed: UInt32 = BloomPrefilter.defaultMurmurSeed) throws -> BloomPrefilter {
        var filter = try BloomPrefilter(itemCount: urls.count, falsePositiveRate: falsePositiveRate, murmurSeed: murmurSeed)
        for url in urls { filter.insert(url) }
        return filter
    }

    /// Writes `<directory>/urls.binpb` (the keyword database), `prefilter.bin` and `prefilter.json`; the JSON is
    /// written last and atomically, so a reader that sees it finds the matching prefilter.
    @discardableResult
    public func write(to directory: String, falsePositiveRate: Double,
                      murmurSeed: UInt32 = BloomPrefilter.defaultMurmurSeed) throws -> PrefilterInfo {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let filter = try prefilter(falsePositiveRate: falsePositiveRate, murmurSeed: murmurSeed)
        try Data(try keywordDatabase().serializedBytes() as [UInt8]).write(to: URL(fileURLWithPath: "\(directory)/urls.binpb"), options: .atomic)
        try Data(filter.bytes).write(to: URL(fileURLWithPath: "\(directory)/prefilter.bin"), options: .atomic)
        let info = PrefilterInfo(tag: filter.tag, bitCount: filter.bitCount, hashCount: filter.hashCount, murmurSeed: filter.murmurSeed,
                                 itemCount: urls.count, falsePositiveRate: falsePositiveRate,
                                 predictedFalsePositiveRate: filter.predictedFalsePositiveRate(itemCount: urls.count),
                                 byteCount: filter.bytes.count)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(info).write(to: URL(fileURLWithPath: "\(directory)/prefilter.json"), options: .atomic)
        return info
    }
}
