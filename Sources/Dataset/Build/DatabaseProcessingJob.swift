import LookupProtocol
import BFV
import PIR
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Processes a keyword database into servable shard files: per shard `<stem>-<i>.cvshard` (CallVeil's
/// checksummed shard file) and `<stem>-<i>.params.txtpb` (`pir.v1.PirParameters`), plus
/// `<stem>.evaluation-key-config.txtpb`, the union key config devices must satisfy.
public struct DatabaseProcessingJob: Sendable {
    /// Processing options (parameters, sharding, cuckoo settings).
    public let options: ProcessingOptions
    /// Output path stem.
    public let outputStem: String

    /// A job writing to `outputStem`.
    public init(options: ProcessingOptions, outputStem: String) {
        self.options = options
        self.outputStem = outputStem
    }

    /// Runs the job; `progress` is called with (shards done, shard count).
    public func run(rows: [(keyword: [UInt8], value: [UInt8])], progress: (Int, Int) -> Void = { _, _ in }) throws {
        let directory = URL(fileURLWithPath: outputStem).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: options.shardCount, sharding: options.sharding)
        let maxValue = rows.map(\.value.count).max() ?? 0
        progress(0, options.shardCount)
        var galois = Set<Int>()
        for (index, shardEntries) in entries.enumerated() {
            let shard = try ShardOutput(entries: shardEntries, options: options, maxValueLength: maxValue)
            try Data(shard.shardBytes).write(to: URL(fileURLWithPath: "\(outputStem)-\(index).cvshard"))
            try Data(shard.parameterBytes).write(to: URL(fileURLWithPath: "\(outputStem)-\(index).params.txtpb"))
            galois.formUnion(shard.keyConfig.galoisElements)
            progress(index + 1, options.shardCount)
        }
        let union = EvaluationKeyConfig(galoisElements: galois.sorted(), hasRelinearizationKey: true)
        let unionText = EvaluationKeyConfigMessage(union, parameters: options.encryption).textFormatString()
        try Data(unionText.utf8).write(to: URL(fileURLWithPath: "\(outputStem).evaluation-key-config.txtpb"))
    }
}
