import LookupProtocol
import BFV
import Crypto
import PIR
import Foundation

/// The record of one processed dataset version: the options it was built with, its input, and every file of
/// every shard with its size and SHA-256. The service and the cluster load versions through it, incremental
/// updates start from it, and `callveil db diff` compares two of them. Files are named after their contents and
/// never overwritten; the manifest is written last and atomically, so a directory's manifest only ever names
/// complete files and a version is replaced by one rename.
public struct DatasetManifest: Codable, Sendable, Equatable {
    /// Current manifest format: 2 has version-2 shard files (plaintext payloads, from which an update restores a
    /// shard's cuckoo table and patches it in place) and no row files; format 1, still read, has evaluation-form
    /// shard files and row files, and an update from it lays changed shards out afresh.
    public static let currentFormat = 2
    /// Formats this version reads.
    public static let readableFormats = 1...2

    /// Whether the shard files hold their buckets readably, so that an update can patch them in place (format 2).
    public var shardsArePatchable: Bool { format >= 2 }
    /// Manifest file name for a stem: `<stem>.manifest.json`.
    public static func fileName(stem: String) -> String { "\(stem).manifest.json" }

    /// A file of the version, relative to the manifest's directory.
    public struct File: Codable, Sendable, Equatable {
        /// Path relative to the manifest's directory.
        public var path: String
        /// Size in bytes.
        public var bytes: Int
        /// SHA-256 of the contents, hex.
        public var sha256: String

        /// A file entry.
        public init(path: String, bytes: Int, sha256: String) {
            self.path = path
            self.bytes = bytes
            self.sha256 = sha256
        }

        /// The SHA-256 as its 32 bytes; nil if the recorded text is not 64 hex digits.
        public var sha256Bytes: [UInt8]? {
            let digits = Array(sha256.utf8)
            guard digits.count == 64 else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(32)
            for i in stride(from: 0, to: 64, by: 2) {
                guard let pair = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
                out.append(pair)
            }
            return out
        }
    }

    /// The input a version was built from.
    public struct Input: Codable, Sendable, Equatable {
        /// The path given on the command line.
        public var path: String
        /// Size in bytes.
        public var bytes: Int
        /// SHA-256 of the input's bytes, hex.
        public var sha256: String
    }

    /// The processing options, in the form the command line takes them.
    public struct Options: Codable, Sendable, Equatable {
        /// BFV parameter preset name.
        public var preset: String
        /// Number of shards.
        public var shardCount: Int
        /// `sha256` or `double-mod`.
        public var sharding: String
        /// With `double-mod`: the other use case's shard count.
        public var otherShardCount: Int?
        /// Cuckoo hash functions.
        public var hashFunctions: Int
        /// Evictions per insertion before a table grows.
        public var maxEvictions: Int
        /// Fixed bucket count per shard; nil lets tables grow with the data.
        public var fixedBucketCount: Int?
        /// Bucket byte budget; nil for the default from the largest value.
        public var maxBucketSize: Int?
        /// Galois-key compression: none, maximum or hybrid.
        public var keyCompression: String

        /// Options as given.
        public init(preset: String, shardCount: Int, sharding: String = "sha256", otherShardCount: Int? = nil,
                    hashFunctions: Int = 2, maxEvictions: Int = 100, fixedBucketCount: Int? = nil, maxBucketSize: Int? = nil,
                    keyCompression: String = "none") {
            self.preset = preset
            self.shardCount = shardCount
            self.sharding = sharding
            self.otherShardCount = otherShardCount
            self.hashFunctions = hashFunctions
            self.maxEvictions = maxEvictions
            self.fixedBucketCount = fixedBucketCount
            self.maxBucketSize = maxBucketSize
            self.keyCompression = keyCompression
        }

        /// The engine's options, after checking every value.
        public func processingOptions() throws -> ProcessingOptions {
            guard let preset = ParameterPreset(rawValue: preset) else { throw DatasetError.processing("unknown preset \(self.preset)") }
            guard let compression = KeyCompression(rawValue: keyCompression) else {
                throw DatasetError.processing("key compression must be none, maximum or hybrid")
            }
            guard (1...UseCaseConfiguration.maxShardCount).contains(shardCount) else {
                throw DatasetError.processing("shard count \(shardCount) outside 1...\(UseCaseConfiguration.maxShardCount)")
            }
            guard (1...8).contains(hashFunctions), (0...100_000).contains(maxEvictions) else {
                throw DatasetError.processing("hash functions must be 1...8 and evictions 0...100000")
            }
            let function: ShardingFunction
            switch sharding {
            case "sha256": function = .sha256
            case "double-mod":
                guard let other = otherShardCount, other > 0 else { throw DatasetError.processing("double-mod needs a positive other shard count") }
                function = .doubleMod(otherShardCount: other)
            default: throw DatasetError.processing("sharding must be sha256 or double-mod")
            }
            var options = ProcessingOptions(encryption: EncryptionParameters(preset), shardCount: shardCount, sharding: function,
                                            hashFunctionCount: hashFunctions, maxEvictionCount: maxEvictions,
                                            maxSerializedBucketSize: maxBucketSize, keyCompression: compression)
            if let fixed = fixedBucketCount {
                guard fixed > 0, fixed <= 1 << 26 else { throw DatasetError.processing("fixed bucket count \(fixed) outside 1...2^26") }
                options.bucketCount = .fixedSize(bucketCount: fixed)
            }
            if let size = maxBucketSize, !(16...(1 << 20)).contains(size) {
                throw DatasetError.processing("bucket size \(size) outside 16...1048576")
            }
            return options
        }
    }

    /// One shard of the version.
    public struct Shard: Codable, Sendable, Equatable {
        /// Shard index.
        public var index: Int
        /// Rows in the shard.
        public var rows: Int
        /// Largest value in the shard, in bytes.
        public var maxValueLength: Int
        /// Galois elements the shard's queries need.
        public var galoisElements: [Int]
        /// The processed shard (`.cvshard`).
        public var shard: File
        /// Its `PirParameters` (`.params.txtpb`).
        public var parameters: File
        /// Format 1: its rows (`.rows`), the input of the next incremental update; format 2 has none (the shard
        /// file holds the rows).
        public var rowFile: File?
    }

    /// Manifest format.
    public var format: Int
    /// The use case the version is for, when given.
    public var useCase: String?
    /// File name stem of the shard files.
    public var stem: String
    /// The use case's config id (hex), stable across data updates with a fixed shard configuration.
    public var configID: String
    /// The processing options.
    public var options: Options
    /// The bucket budget the shards were laid out with (the options' or the default from `maxValueLength`).
    public var bucketBytes: Int
    /// Largest value over all rows.
    public var maxValueLength: Int
    /// Total rows.
    public var rows: Int
    /// The full input, or for a delta update the previous version's input.
    public var input: Input?
    /// The delta file of an incremental update.
    public var delta: Input?
    /// SHA-256 of the previous version's manifest, for an incremental update.
    public var previousManifestSHA256: String?
    /// The union evaluation-key config devices must satisfy (`.evaluation-key-config.txtpb`).
    public var keyConfig: File
    /// The shards in index order.
    public var shards: [Shard]
    /// The published list laid over the curated rows (`DatasetOverlay`), when one is applied.
    public var overlay: OverlayRecord?

    /// Where a version's overlay is and what it holds.
    public struct OverlayRecord: Codable, Sendable, Equatable {
        /// The overlay file (`<stem>.<hash>.overlay.json`).
        public var file: File
        /// The list's name.
        public var list: String
        /// The list version applied.
        public var version: Int
        /// Keywords listed.
        public var entries: Int
    }
}

extension DatasetManifest {
    /// Reads and checks a manifest (format, shard indices); file contents are checked by `verify(directory:)`.
    public static func read(path: String) throws -> DatasetManifest {
        guard let data = FileManager.default.contents(atPath: path) else { throw DatasetError.unreadable(path: path, why: "no such file") }
        guard data.count <= 64 << 20 else { throw DatasetError.badManifest("\(path) is larger than 64 MiB") }
        let manifest: DatasetManifest
        do {
            manifest = try JSONDecoder().decode(DatasetManifest.self, from: data)
        } catch {
            throw DatasetError.badManifest("\(path) is not a dataset manifest: \(error)")
        }
        guard readableFormats.contains(manifest.format) else {
            throw DatasetError.badManifest("\(path) has format \(manifest.format), expected one of \(readableFormats)")
        }
        guard manifest.shards.count == manifest.options.shardCount,
              manifest.shards.enumerated().allSatisfy({ $0.offset == $0.element.index }) else {
            throw DatasetError.badManifest("\(path) lists \(manifest.shards.count) shards for a shard count of \(manifest.options.shardCount)")
        }
        for file in manifest.files where file.path.contains("/") || file.path.hasPrefix(".") {
            throw DatasetError.badManifest("\(path) names a file outside its directory: \(file.path)")
        }
        return manifest
    }

    /// Every file the manifest names.
    public var files: [File] {
        [keyConfig] + shards.flatMap { [$0.shard, $0.parameters, $0.rowFile].compactMap { $0 } } + [overlay?.file].compactMap { $0 }
    }

    /// The overlay this version applies, read from its file (checked); nil when there is none.
    public func readOverlay(directory: String) throws -> DatasetOverlay? {
        try overlay.map { try DatasetOverlay.read($0.file, directory: directory) }
    }

    /// Checks that each file in `directory` has the recorded size and SHA-256.
    public func verify(directory: String, files: [File]? = nil) throws {
        for file in files ?? self.files { try Self.check(file, directory: directory) }
    }

    /// Checks one file's size and SHA-256.
    public static func check(_ file: File, directory: String) throws {
        let path = "\(directory)/\(file.path)"
        let digest = try FileDigest.of(path: path)
        try expect(digest, matches: file, path: path)
    }

    /// Checks only that one file is there with its recorded size (cheap; its SHA-256 is checked when it is read).
    public static func checkSize(_ file: File, directory: String) throws {
        let path = "\(directory)/\(file.path)"
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
        guard size == file.bytes else {
            throw DatasetError.badManifest("\(path) has \(size.map(String.init) ?? "no") bytes; the manifest records \(file.bytes)")
        }
    }

    /// Reads one file whole and checks its size and SHA-256 on the bytes read, so a file that is checked and
    /// then used is read once.
    public static func contents(of file: File, directory: String) throws -> [UInt8] {
        let path = "\(directory)/\(file.path)"
        guard let data = FileManager.default.contents(atPath: path) else { throw DatasetError.unreadable(path: path, why: "cannot read") }
        let bytes = [UInt8](data)
        let digest = FileDigest.of(bytes: bytes)
        try expect(digest, matches: file, path: path)
        return bytes
    }

    static func expect(_ digest: FileDigest, matches file: File, path: String) throws {
        guard digest.bytes == file.bytes, digest.sha256 == file.sha256 else {
            throw DatasetError.badManifest("\(path) has \(digest.bytes) bytes and SHA-256 \(digest.sha256.prefix(16))…; the manifest records \(file.bytes) and \(file.sha256.prefix(16))…")
        }
    }

    /// The manifest as written: pretty, keys sorted.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    /// Writes the manifest atomically (a temporary file synced, then renamed over `path`).
    public func write(path: String) throws {
        try AtomicFile.write(try encoded(), to: path)
    }
}
