import LookupProtocol
import BFV
import PIR

/// One shard laid out from nothing and serialized: its cuckoo table, its `PirParameters`, and the bytes of its
/// version-2 shard file and parameters file. The streamed build and the in-memory job both write shards
/// through it, so they write the same bytes.
struct ShardOutput {
    /// The cuckoo table.
    let table: CuckooTable
    /// The shard's parameters as written.
    let parameters: ProtoPirParameters
    /// The evaluation-key config the shard's queries need.
    let keyConfig: EvaluationKeyConfig
    /// The `.cvshard` bytes.
    let shardBytes: [UInt8]
    /// The `.params.txtpb` bytes.
    let parameterBytes: [UInt8]
    /// Plaintext slots encoded.
    let plaintexts: Int

    /// Lays `entries` out and encodes them.
    init(entries: [HashBucket.Entry], options: ProcessingOptions, maxValueLength: Int) throws {
        let (table, pir, keyConfig) = try KeywordDatabaseProcessor.layout(entries: entries, options: options, maxValueLength: maxValueLength)
        let payloads = try KeywordDatabaseProcessor.payloads(of: table, parameters: pir)
        parameters = ProtoPirParameters(pir, sharding: options.sharding,
                                        keyConfig: EvaluationKeyConfigMessage(keyConfig, parameters: options.encryption))
        shardBytes = try ShardFile.serialize(payloads: payloads, parameters: pir, parameterBlob: try parameters.deterministicBytes())
        parameterBytes = Array(parameters.textFormatString().utf8)
        plaintexts = payloads.reduce(0) { $0 + $1.count }
        self.table = table
        self.keyConfig = keyConfig
    }
}
