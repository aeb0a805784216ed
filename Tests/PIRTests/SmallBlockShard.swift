import BFV
import PIR

/// A 300-row block shard processed with the demo's parameters: the key config and shard parameters tests need
/// without a dataset on disk.
func smallBlockShard() throws -> (shard: ProcessedShard, context: Context) {
    let encryption = EncryptionParameters(.n_4096_logq_27_28_28_logt_5)
    let context = try Context(parameters: encryption)
    let rows = (0..<300).map { (keyword: Array("+1555\($0)".utf8), value: [UInt8(1)]) }
    let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: 1, sharding: .sha256)[0]
    let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: ProcessingOptions(encryption: encryption),
                                                     maxValueLength: 1, context: context)
    return (shard, context)
}
