import ArgumentParser
import BFV
import Dispatch
import Foundation
import LookupProtocol
import PIR
import SwiftProtobuf

/// `callveil process-db`: keyword database → per-shard processed files and parameters.
struct ProcessDatabaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "process-db",
        abstract: "Shard a keyword database, build each shard's cuckoo table and encode it for PIR.",
        discussion: """
        Input: a protobuf KeywordDatabase (.binpb) or a CSV of `keyword,value` lines (value in hex or base64).
        Output, per shard N: <stem>-N.cvshard (CallVeil's shard file, checksummed) and <stem>-N.params.txtpb
        (pir.v1.PirParameters); plus <stem>.evaluation-key-config.txtpb, the union config devices must satisfy.
        """)

    @Option(help: "Keyword database (.binpb or .csv).")
    var input: String

    @Option(help: "Output directory (created if missing).")
    var output: String

    @Option(help: "File name stem of the shard files in the output directory (the service config's fileStem).")
    var fileStem: String = "shard"

    @Option(help: "BFV parameter preset.")
    var preset: String = ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue

    @Option(help: "Number of shards.")
    var shardCount: Int?

    @Option(help: "Rows per shard (shard count = max(rows / this, 1)); ignored with --shard-count.")
    var entriesPerShard: Int?

    @Option(help: "Sharding function: sha256 or double-mod.")
    var sharding: String = "sha256"

    @Option(help: "With double-mod: the other use case's shard count.")
    var otherShardCount: Int?

    @Option(help: "Cuckoo hash functions (PIR calls per query).")
    var hashFunctions: Int = 2

    @Option(help: "Evictions per insertion before a table grows.")
    var maxEvictions: Int = 100

    @Option(help: "Fixed bucket count per shard (all sub-tables): the same shard configuration for every shard and every data update.")
    var fixedBucketCount: Int?

    @Option(help: "Byte budget of a serialized bucket (default: from the largest value).")
    var maxBucketSize: Int?

    @Option(help: "Galois-key compression: none, maximum or hybrid.")
    var keyCompression: String = "none"

    func run() throws {
        guard let preset = ParameterPreset(rawValue: preset) else { throw ValidationError("unknown preset \(self.preset)") }
        guard let compression = KeyCompression(rawValue: keyCompression) else {
            throw ValidationError("key compression must be none, maximum or hybrid")
        }
        let start = DispatchTime.now()
        let rows = try KeywordDatabaseFile.read(path: input)
        let shards = shardCount ?? max(rows.count / max(entriesPerShard ?? max(rows.count, 1), 1), 1)
        let function: ShardingFunction
        switch sharding {
        case "sha256": function = .sha256
        case "double-mod":
            guard let other = otherShardCount, other > 0 else { throw ValidationError("double-mod needs --other-shard-count") }
            function = .doubleMod(otherShardCount: other)
        default: throw ValidationError("sharding must be sha256 or double-mod")
        }
        let encryption = EncryptionParameters(preset)
        var options = ProcessingOptions(encryption: encryption, shardCount: shards, sharding: function,
                                        hashFunctionCount: hashFunctions, maxEvictionCount: maxEvictions,
                                        maxSerializedBucketSize: maxBucketSize, keyCompression: compression)
        if let fixed = fixedBucketCount { options.bucketCount = .fixedSize(bucketCount: fixed) }
        writeStderr("read \(rows.count) rows from \(input); \(shards) shard(s), preset \(preset.rawValue)\n")
        var progress = ProgressBar(label: "processing shards", total: shards)
        try DatabaseProcessingJob(options: options, outputStem: "\(output)/\(fileStem)").run(rows: rows) { done, _ in
            progress.update(done)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        writeStderr("processed \(rows.count) rows into \(shards) shard(s) in \(String(format: "%.1f", seconds)) s; output in \(output)\n")
    }
}
