import LookupProtocol
import BFV
import Dispatch
import PIR
#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Builds a dataset version from an input of any size, or updates one, in bounded memory.
///
/// A build reads the input once and spills each row to its shard's temporary file, then builds the shards in
/// parallel (one per thread), so memory holds one shard per thread, never the dataset. Everything is written
/// under a staging folder beside the output; only when every shard is built are the files renamed into place
/// and the manifest written, last and atomically. A failure leaves the output folder as it was, and the
/// previous version keeps serving.
///
/// With a previous manifest, a shard whose rows and layout are unchanged is kept as it is (not rebuilt, not
/// rewritten), so a data update with a fixed shard configuration keeps the config id and changes only the
/// files (and content hashes) of the shards whose rows changed. A changed shard is updated in place: its
/// cuckoo table is restored from the previous shard file (which stores the plaintexts' payloads, so the buckets
/// are readable), the update moves only the buckets it touches, and only the plaintexts holding those buckets
/// are encoded again and written over a copy of the previous file. The result depends only on the previous
/// version and the new set of rows, so a delta and the equivalent full input give the same bytes; `relayout`
/// lays changed shards out as a build from nothing would.
public struct DatasetBuilder: Sendable {
    /// Processing options (from the command line, or the previous manifest's for a delta).
    public let options: DatasetManifest.Options
    /// Output folder.
    public let directory: String
    /// File name stem of the shard files.
    public let stem: String
    /// Use case name recorded in the manifest.
    public var useCase: String?
    /// Shards built at once.
    public var threads: Int
    /// Lay changed shards out afresh instead of updating their cuckoo tables in place: the result is then
    /// byte-identical to a build without a previous version, at the cost of encoding every plaintext again.
    public var relayout = false
    /// Called with (phase, done, total) from any thread: phase `read` counts input bytes, `build` shards.
    public var progress: @Sendable (String, Int, Int) -> Void
    /// Called at each step of the commit; a throw stops the commit there (tests of a failure or a crash at
    /// every step).
    public var onCommitStep: (@Sendable (CommitStep) throws -> Void)?

    /// What a build or update did.
    public struct Report: Sendable {
        /// The new version's manifest (already written).
        public let manifest: DatasetManifest
        /// Shards built (new content or new layout).
        public let rebuilt: [Int]
        /// Plaintext slots encoded over all rebuilt shards (only the changed ones where a shard was updated in place).
        public let plaintextsEncoded: Int
        /// Bytes of the files written for the rebuilt shards.
        public let bytesWritten: Int
        /// Seconds reading and spilling the input (or applying the delta).
        public let readSeconds: Double
        /// Seconds building shards.
        public let buildSeconds: Double
        /// Bytes of every row's value, when the whole input was read (a full build), for the table fill.
        public internal(set) var valueBytes: Int?
    }

    /// A builder writing `<directory>/<stem>-<i>.*` and `<directory>/<stem>.manifest.json`.
    public init(options: DatasetManifest.Options, directory: String, stem: String, useCase: String? = nil,
                threads: Int = ProcessInfo.processInfo.activeProcessorCount,
                progress: @escaping @Sendable (String, Int, Int) -> Void = { _, _, _ in }) {
        self.options = options
        self.directory = directory
        self.stem = stem
        self.useCase = useCase
        self.threads = max(threads, 1)
        self.progress = progress
    }

    /// Where a shard's rows come from for this build.
    enum RowSource {
        /// A spill file of this build (with input lines): the shard's rows.
        case spill(String)
        /// The delta's lines for this shard of the previous version (none: the shard is unchanged).
        case delta([DatasetDelta.Entry])
    }

    /// A version loaded from its manifest's folder.
    public struct Previous: Sendable {
        /// The manifest.
        public let manifest: DatasetManifest
        /// Its folder.
        public let directory: String

        /// Reads `<path>` (a manifest file).
        public init(manifestPath path: String) throws {
            manifest = try DatasetManifest.read(path: path)
            directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        }

        /// A shard's `PirParameters`, its file checked against the manifest.
        func parameters(of shard: DatasetManifest.Shard) throws -> ProtoPirParameters {
            let bytes = try DatasetManifest.contents(of: shard.parameters, directory: directory)
            do {
                return try ProtoPirParameters(textFormatString: String(decoding: bytes, as: UTF8.self))
            } catch {
                throw DatasetError.badManifest("cannot read \(directory)/\(shard.parameters.path): \(error)")
            }
        }
    }

    /// Builds a version from a full input (CSV or `.binpb`) of curated rows. With `previous`, unchanged shards are
    /// kept. The overlay of `previous` (or, without one, of the version now in the output folder) stays applied:
    /// its keywords keep the list's value and record their new curated values.
    public func build(input path: String, previous: Previous? = nil) throws -> Report {
        let engine = try options.processingOptions()
        var overlay = try previous.map { try $0.manifest.readOverlay(directory: $0.directory) } ?? currentOverlay()
        let staging = try makeStaging()
        defer { try? FileManager.default.removeItem(atPath: staging) }
        let start = DispatchTime.now()
        let writers = try (0..<engine.shardCount).map { try SpillWriter(path: "\(staging)/spill-\($0)") }
        var problems: [DatasetError.LineProblem] = []
        let progress = self.progress
        let listed = overlay?.indexByHash ?? [:]
        let forced = overlay?.forcedValue ?? []
        var curated: [Int: [UInt8]] = [:]
        var valueBytes = 0
        let input = try KeywordRowSource.forEachRow(path: path, progress: { progress("read", $0, $1) }) { line, keyword, value in
            guard value.count <= HashBucket.maxValueLength else {
                if problems.count < KeywordRowSource.keptProblems {
                    problems.append(.init(line: line, why: "keyword \(KeywordRowSource.describe(keyword: keyword)): value of \(value.count) bytes exceeds the \(HashBucket.maxValueLength) a PIR row holds"))
                }
                return
            }
            let hash = KeywordHash.hash(keyword)
            let shard = engine.sharding.shardIndex(keywordHash: hash, shardCount: engine.shardCount)
            var value = value
            if let i = listed[hash] {
                if curated[i] == nil { curated[i] = value }
                value = forced
            }
            try writers[shard].append(ShardRow(hash: hash, line: UInt32(clamping: line), value: value))
            valueBytes += value.count
        }
        guard problems.isEmpty else { throw DatasetError.malformedLines(problems) }
        if var applied = overlay {
            for i in applied.entries.indices {
                applied.entries[i].curated = curated[i]?.hexString
                guard curated[i] == nil else { continue }
                let hash = applied.entries[i].hash
                let shard = engine.sharding.shardIndex(keywordHash: hash, shardCount: engine.shardCount)
                try writers[shard].append(ShardRow(hash: hash, line: 0, value: forced))
                valueBytes += forced.count
            }
            overlay = applied
        }
        for writer in writers { try writer.close() }
        let maxValue = writers.map(\.maxValueLength).max() ?? 0
        let readSeconds = Self.seconds(since: start)
        let sources = writers.map { RowSource.spill($0.path) }
        var report = try finish(sources: sources, maxValueLength: maxValue, previous: previous, staging: staging,
                                input: input, delta: nil, overlay: overlay, readSeconds: readSeconds)
        report.valueBytes = valueBytes
        return report
    }

    /// The overlay of the version now in the output folder, if it has one.
    func currentOverlay() throws -> DatasetOverlay? {
        let path = "\(directory)/\(DatasetManifest.fileName(stem: stem))"
        guard FileManager.default.fileExists(atPath: path), let manifest = try? DatasetManifest.read(path: path) else { return nil }
        return try manifest.readOverlay(directory: directory)
    }

    /// Applies a delta to `previous` with its own options: only the shards the delta touches are rebuilt
    /// (all of them if the largest value changes the default bucket budget).
    public func apply(delta path: String, to previous: Previous) throws -> Report {
        let engine = try options.processingOptions()
        let staging = try makeStaging()
        defer { try? FileManager.default.removeItem(atPath: staging) }
        let start = DispatchTime.now()
        let delta = try DatasetDelta.read(path: path)
        // A listed keyword's line changes its curated value; its row keeps the list's value.
        var overlay = try previous.manifest.readOverlay(directory: previous.directory)
        var dataEntries = delta.entries
        if var applied = overlay {
            let listed = applied.indexByHash
            dataEntries = []
            for entry in delta.entries {
                guard let i = listed[entry.hash] else { dataEntries.append(entry); continue }
                try entry.check(present: applied.entries[i].curated != nil)
                switch entry.operation {
                case .add(let value), .change(let value), .set(let value): applied.entries[i].curated = value.hexString
                case .remove: applied.entries[i].curated = nil
                }
            }
            overlay = applied
        }
        let perShard = Self.byShard(dataEntries, engine: engine)
        // The largest value after the delta is at most the previous largest or a new one; shards keep their bucket
        // budget while that bound fits it.
        var maxValue = previous.manifest.maxValueLength
        for entry in delta.entries {
            switch entry.operation {
            case .add(let value), .change(let value), .set(let value): maxValue = max(maxValue, value.count)
            case .remove: break
            }
        }
        let sources = previous.manifest.shards.map { RowSource.delta(perShard[$0.index] ?? []) }
        return try finish(sources: sources, maxValueLength: maxValue, previous: previous, staging: staging,
                          input: previous.manifest.input, delta: delta.input, overlay: overlay, readSeconds: Self.seconds(since: start))
    }

    /// Lays version `version` of the list `list` over `previous`: `keywords` answer `value`, keywords that left the
    /// list get their curated value back (or leave the data when the curated data lacks them), curated values are
    /// kept. Only the shards whose rows change are rewritten.
    public func apply(list: String, version: Int, keywords: [String], value: [UInt8], to previous: Previous) throws -> Report {
        let engine = try options.processingOptions()
        let old = try previous.manifest.readOverlay(directory: previous.directory)
        let was = Dictionary(uniqueKeysWithValues: (old?.entries ?? []).map { ($0.keyword, $0) })
        let wanted = Set(keywords)
        let valueChanged = old.map { $0.forcedValue != value } ?? false
        let entering = wanted.filter { was[$0] == nil }
        let current = try currentValues(of: Set(entering.map { KeywordHash.hash(Array($0.utf8)) }), in: previous, engine: engine)
        var entries: [DatasetDelta.Entry] = []
        var next: [DatasetOverlay.Entry] = []
        for keyword in wanted.sorted() {
            let hash = KeywordHash.hash(Array(keyword.utf8))
            if let kept = was[keyword] {
                next.append(kept)
                if valueChanged { entries.append(.init(hash: hash, line: 0, operation: .set(value))) }
                continue
            }
            let now = current[hash]
            next.append(.init(keyword: keyword, curated: now?.hexString))
            if now != value { entries.append(.init(hash: hash, line: 0, operation: .set(value))) }
        }
        for (keyword, entry) in was where !wanted.contains(keyword) {
            let hash = entry.hash
            switch entry.curatedValue {
            case nil: entries.append(.init(hash: hash, line: 0, operation: .remove))
            case let curated? where curated != old?.forcedValue: entries.append(.init(hash: hash, line: 0, operation: .set(curated)))
            default: break
            }
        }
        let staging = try makeStaging()
        defer { try? FileManager.default.removeItem(atPath: staging) }
        let perShard = Self.byShard(entries, engine: engine)
        let sources = previous.manifest.shards.map { RowSource.delta(perShard[$0.index] ?? []) }
        let overlay = DatasetOverlay(list: list, version: version, value: value, entries: next)
        return try finish(sources: sources, maxValueLength: max(previous.manifest.maxValueLength, value.count), previous: previous,
                          staging: staging, input: previous.manifest.input, delta: nil, overlay: overlay, readSeconds: 0)
    }

    /// Delta entries grouped by the shard of their keyword.
    static func byShard(_ entries: [DatasetDelta.Entry], engine: ProcessingOptions) -> [Int: [DatasetDelta.Entry]] {
        Dictionary(grouping: entries) { engine.sharding.shardIndex(keywordHash: $0.hash, shardCount: engine.shardCount) }
    }

    /// The present values of `hashes` in `previous`, read from the shards that hold them.
    func currentValues(of hashes: Set<UInt64>, in previous: Previous, engine: ProcessingOptions) throws -> [UInt64: [UInt8]] {
        guard !hashes.isEmpty else { return [:] }
        let context = try Context(parameters: engine.encryption)
        var byShard: [Int: Set<UInt64>] = [:]
        for hash in hashes { byShard[engine.sharding.shardIndex(keywordHash: hash, shardCount: engine.shardCount), default: []].insert(hash) }
        var values: [UInt64: [UInt8]] = [:]
        for (shard, wanted) in byShard {
            for row in try previousRows(shard, of: previous, engine: engine, context: context) where wanted.contains(row.hash) {
                values[row.hash] = row.value
            }
        }
        return values
    }

    static func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    func makeStaging() throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let staging = "\(directory)/.\(stem).staging-\(getpid())"
        try? FileManager.default.removeItem(atPath: staging)
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: false)
        return staging
    }
}
