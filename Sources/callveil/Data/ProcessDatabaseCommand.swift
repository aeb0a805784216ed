import ArgumentParser
import BFV
import Dataset
import Dispatch
import Foundation
import LookupProtocol
import PIR

/// `callveil process-db`: keyword database → a dataset version (per-shard files and a manifest), streamed in
/// bounded memory; with `--previous`, an incremental update that rewrites only the shards whose rows changed.
struct ProcessDatabaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "process-db",
        abstract: "Shard a keyword database, build each shard's cuckoo table and encode it for PIR.",
        discussion: """
        Input: a CSV of `keyword,value` lines (value in hex or base64) of any size, or a protobuf KeywordDatabase (.binpb).
        The input is read once; rows are spilled to per-shard files and the shards are built in parallel.
        Output, per shard N: <stem>-N.<hash>.cvshard (CallVeil's shard file: the plaintexts' payloads, which also serve
        the next update) and <stem>-N.<hash>.params.txtpb (pir.v1.PirParameters); <stem>.<hash>.evaluation-key-config.txtpb;
        files named after their contents, never overwritten; and <stem>.manifest.json, replaced last by one rename (the
        commit). A failed or crashed run leaves the previous version serving and the next run working. A published
        report list applied to the folder (`callveil reports publish`) stays applied.

        Updates: --previous MANIFEST with a new full --input rebuilds only shards whose rows changed; --previous
        MANIFEST with --delta FILE (lines `add,keyword,value`, `change,keyword,value`, `remove,keyword`) applies
        the change. Options not given are taken from the previous manifest. Use --fixed-bucket-count (and
        --max-bucket-size) to keep the config id across updates. A changed shard is updated in place: only the
        plaintexts of the cuckoo buckets the change touches are encoded again (--relayout lays changed shards out
        as a build from nothing would, byte for byte, and encodes them whole).

        A full build prints the tables' load factor, and warns when a --fixed-bucket-count leaves them under 10% full.
        Exit status: 64 bad usage, 65 bad data, 66 an unreadable input, 74 a failure to build or write the output.
        """)

    @Option(help: "Keyword database (.csv or .binpb).")
    var input: String?

    @Option(help: "Output directory (created if missing).")
    var output: String

    @Option(help: "File name stem of the shard files in the output directory (the service config's fileStem).")
    var fileStem: String?

    @Option(help: "The previous version's manifest: keep its unchanged shards.")
    var previous: String?

    @Option(help: "With --previous: a delta file instead of a full input.")
    var delta: String?

    @Flag(help: "With --previous: lay changed shards out afresh instead of updating them in place.")
    var relayout = false

    @Option(help: "Use case name recorded in the manifest.")
    var useCase: String?

    @Option(help: "BFV parameter preset (default \(ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue)).")
    var preset: String?

    @Option(help: "Number of shards.")
    var shardCount: Int?

    @Option(help: "Rows per shard (shard count = max(rows / this, 1)); ignored with --shard-count.")
    var entriesPerShard: Int?

    @Option(help: "Sharding function: sha256 or double-mod.")
    var sharding: String?

    @Option(help: "With double-mod: the other use case's shard count.")
    var otherShardCount: Int?

    @Option(help: "Cuckoo hash functions (PIR calls per query; default 2).")
    var hashFunctions: Int?

    @Option(help: "Evictions per insertion before a table grows (default 100).")
    var maxEvictions: Int?

    @Option(help: "Fixed bucket count per shard (all sub-tables): the same shard configuration for every shard and every data update.")
    var fixedBucketCount: Int?

    @Option(help: "Byte budget of a serialized bucket (default: from the largest value).")
    var maxBucketSize: Int?

    @Option(help: "Galois-key compression: none, maximum or hybrid.")
    var keyCompression: String?

    @Option(help: "Shards built at once (default: the number of cores).")
    var threads: Int?

    func run() throws {
        let start = DispatchTime.now()
        let previousVersion = try previous.map { try DatasetBuilder.Previous(manifestPath: $0) }
        let before = previousVersion?.manifest.options
        guard (input == nil) != (delta == nil) else { throw ValidationError("give either --input or --delta") }
        if delta != nil, previousVersion == nil { throw ValidationError("--delta needs --previous") }
        let shards: Int
        if let shardCount {
            shards = shardCount
        } else if let before, entriesPerShard == nil {
            shards = before.shardCount
        } else if let perShard = entriesPerShard, let input {
            shards = max(try Self.countRows(input) / max(perShard, 1), 1)
        } else {
            shards = 1
        }
        let options = DatasetManifest.Options(
            preset: preset ?? before?.preset ?? ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue, shardCount: shards,
            sharding: sharding ?? before?.sharding ?? "sha256", otherShardCount: otherShardCount ?? before?.otherShardCount,
            hashFunctions: hashFunctions ?? before?.hashFunctions ?? 2, maxEvictions: maxEvictions ?? before?.maxEvictions ?? 100,
            fixedBucketCount: fixedBucketCount ?? before?.fixedBucketCount, maxBucketSize: maxBucketSize ?? before?.maxBucketSize,
            keyCompression: keyCompression ?? before?.keyCompression ?? "none")
        _ = try options.processingOptions()  // every value checked before any work
        if delta != nil, let before, before != options {
            throw ValidationError("a delta keeps the previous version's options; drop the processing options or give a full --input")
        }
        let bars = SharedProgress(labels: ["read": ("reading input", "B"), "build": ("building shards", "")])
        var builder = DatasetBuilder(options: options, directory: output, stem: fileStem ?? previousVersion?.manifest.stem ?? "shard",
                                     useCase: useCase, threads: threads ?? ProcessInfo.processInfo.activeProcessorCount) {
            bars.update(phase: $0, done: $1, total: $2)
        }
        builder.relayout = relayout
        let report: DatasetBuilder.Report
        do {
            if let delta, let previousVersion {
                report = try builder.apply(delta: delta, to: previousVersion)
            } else {
                report = try builder.build(input: input ?? "", previous: previousVersion)
            }
        } catch let error as DatasetError {
            throw DataExitStatus.fail("process-db failed, output unchanged: \(error)", status: DataExitStatus.status(of: error))
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let manifest = report.manifest
        // The upload this output asks of every device: one key for the union of the shards' Galois elements.
        let keyConfig = EvaluationKeyConfig(galoisElements: Set(manifest.shards.flatMap(\.galoisElements)).sorted(),
                                            hasRelinearizationKey: true)
        let keyBytes = try keyConfig.serializedKeyBytes(context: Context(parameters: options.processingOptions().encryption))
        writeStderr("""
            processed \(manifest.rows) rows into \(manifest.shards.count) shard(s) in \(String(format: "%.1f", seconds)) s \
            (read \(String(format: "%.1f", report.readSeconds)) s, build \(String(format: "%.1f", report.buildSeconds)) s, \
            \(Int(Double(manifest.rows) / max(seconds, 1e-9))) rows/s); rebuilt \(report.rebuilt.count), kept \
            \(manifest.shards.count - report.rebuilt.count), plaintexts encoded \(report.plaintextsEncoded); wrote \(report.bytesWritten) bytes; config id \(manifest.configID.prefix(16))…; \
            manifest \(output)/\(DatasetManifest.fileName(stem: manifest.stem))
            evaluation key a device uploads: \(keyBytes) bytes (\(keyConfig.galoisElements.count) Galois keys and \
            the relinearization key, key compression \(options.keyCompression))

            """)
        if let valueBytes = report.valueBytes {
            let fill = try TableFill.of(manifestPath: "\(output)/\(DatasetManifest.fileName(stem: manifest.stem))", valueBytes: valueBytes)
            writeStderr("load factor \(Self.percent(fill.fraction)): the rows take \(fill.used) of the \(fill.capacity) bytes of \(fill.buckets) buckets of \(fill.bucketBytes) bytes\n")
            if let fixed = options.fixedBucketCount, fill.fraction < 0.1 {
                writeStderr("""
                    warning: --fixed-bucket-count \(fixed) leaves the tables \(Self.percent(fill.fraction)) full for \(manifest.rows) rows; every query \
                    computes over the whole table and the output takes \(report.bytesWritten) bytes. About \
                    \(fill.bucketsForHalfFull(shards: manifest.shards.count)) buckets per shard would hold these rows half full \
                    (keep some room for growth: a fixed count keeps the config id across updates).

                    """)
            }
        }
    }

    static func percent(_ fraction: Double) -> String {
        fraction >= 0.01 ? String(format: "%.0f%%", fraction * 100) : String(format: "%.2g%%", fraction * 100)
    }

    /// Rows in a CSV (non-empty lines, less a header) or a `.binpb`, for `--entries-per-shard`.
    static func countRows(_ path: String) throws -> Int {
        var count = 0
        _ = try KeywordRowSource.forEachRow(path: path) { _, _, _ in count += 1 }
        return count
    }
}
