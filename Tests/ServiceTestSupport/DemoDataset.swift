import Dataset
import Foundation
import LookupProtocol
import LookupService
import PIR
import ServiceCore

/// A small identity dataset processed into servable shard files, as `build-db` + `process-db` make them.
public struct DemoDataset: Sendable {
    public static let block = "net.example.lookup.block"
    public static let identity = "net.example.lookup.identity"

    public let records: [IdentityRecord]
    public let useCases: [ServiceConfig.UseCase]

    /// `count` numbers (every 5th blocked, two thirds named) processed under `directory`, after Apple's test identity
    /// when `testIdentity`.
    public static func make(in directory: String, count: Int = 300, seed: Int = 0, identityShards: Int = 2, versionCount: Int = 2,
                            flipBlock: Int? = nil, testIdentity: Bool = false) throws -> DemoDataset {
        var records: [IdentityRecord] = []
        if testIdentity {  // Apple's onboarding test identity
            records.append(IdentityRecord(number: "+14085551212", name: "Johnny Appleseed", category: .person, block: false, cacheExpiryMinutes: 5))
        }
        for i in 0..<count {
            let number = "+1" + String(format: "%03d", 200 + (i * 7919 + seed * 31) % 800) + String(format: "%07d", 2_000_000 + i * 37 + seed)
            records.append(IdentityRecord(number: number, name: i % 3 == 2 ? "" : "Caller \(i)",
                                          category: i % 3 == 0 ? .person : i % 3 == 1 ? .business : .unspecified,
                                          block: (i % 5 == 0) != (i == flipBlock), cacheExpiryMinutes: i % 3 == 2 ? 0 : UInt32(10 + i % 50)))
        }
        let (blockDB, identityDB) = try IdentityDataset.keywordDatabases(records)
        func rows(_ db: ProtoKeywordDatabase) -> [(keyword: [UInt8], value: [UInt8])] { db.rows.map { ([UInt8]($0.keyword), [UInt8]($0.value)) } }
        var blockOptions = ProcessingOptions(encryption: .init(.n_4096_logq_27_28_28_logt_5), shardCount: 2, sharding: .sha256)
        blockOptions.bucketCount = .fixedSize(bucketCount: 256)
        try DatabaseProcessingJob(options: blockOptions, outputStem: "\(directory)/block/shard").run(rows: rows(blockDB))
        let identityOptions = ProcessingOptions(encryption: .init(.n_4096_logq_27_28_28_logt_5), shardCount: identityShards, sharding: .sha256)
        try DatabaseProcessingJob(options: identityOptions, outputStem: "\(directory)/identity/shard").run(rows: rows(identityDB))
        return DemoDataset(records: records, useCases: [
            .init(name: block, fileStem: "\(directory)/block/shard", versionCount: versionCount),
            .init(name: identity, fileStem: "\(directory)/identity/shard", versionCount: versionCount),
        ])
    }

    /// A number of the same shape that is not in the dataset.
    public static let absentNumber = "+15550000001"
}
