import ArgumentParser
import BFV
import Foundation
import LookupProtocol
import PIR

/// `callveil-bench key-memory`: parses one evaluation key `--count` times and keeps every copy, then prints, as JSON, what
/// the parsed-key cache would charge for them (`EvaluationKey.memoryBytes`) and how much this process's RSS grew.
/// A process of its own, so nothing else moves the RSS; the tests check the charge within 20% of the growth.
struct KeyMemoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key-memory",
        abstract: "Measure the RSS of parsed evaluation keys against the key cache's charge (JSON).",
        shouldDisplay: false)

    @Option(help: "Keys to parse and keep.") var count = 100
    @Option(help: "BFV preset.") var preset = ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue

    func run() throws {
        guard let preset = ParameterPreset(rawValue: preset) else { throw ValidationError("unknown preset \(preset)") }
        let encryption = EncryptionParameters(preset)
        let context = try Context(parameters: encryption)
        let rows = (0..<300).map { (keyword: Array("+1555\($0)".utf8), value: [UInt8(1)]) }
        let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: 1, sharding: .sha256)[0]
        let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: ProcessingOptions(encryption: encryption),
                                                         maxValueLength: 1, context: context)
        let key = try EvaluationKey(config: shard.evaluationKeyConfig, secretKey: SecretKey(context: context))
        let serialized: [UInt8] = try ProtoEvaluationKey(key.serialize()).serializedBytes()
        // One parse first, so the code paths and their first allocations are not counted.
        _ = try ProtoEvaluationKey.evaluationKey(serialized: serialized, context: context)
        let before = PeakSampler.rss(getpid()) ?? 0
        var kept: [EvaluationKey] = []
        for _ in 0..<count {
            kept.append(try ProtoEvaluationKey.evaluationKey(serialized: serialized, context: context))
        }
        let after = PeakSampler.rss(getpid()) ?? 0
        let charged = kept.reduce(0) { $0 + $1.memoryBytes }
        print("{\"keys\":\(kept.count),\"serializedBytes\":\(serialized.count),\"charged\":\(charged),\"rssGrowth\":\(after - before)}")
    }
}
