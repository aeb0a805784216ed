import ArgumentParser
import Foundation
import LookupClient
import LookupProtocol
import PIR
import BFV

/// The bench's dataset: numbers with block decisions and identities of a chosen size, processed into shards,
/// and the truth the answers are checked against.
struct BenchDataset {
    static let block = "net.example.lookup.block"
    static let identity = "net.example.lookup.identity"

    let directory: String
    let truth: LoadGenerator.Truth

    static func prepare(directory: String, rows: Int, identitySize: Int, blockShards: Int, identityShards: Int, preset: String,
                        corrupt: Bool, reuse: Bool, seed: UInt64) throws -> BenchDataset {
        guard let preset = ParameterPreset(rawValue: preset) else { throw CleanExit.message("unknown preset \(preset)") }
        let directory = URL(fileURLWithPath: directory).standardizedFileURL.path  // the service config needs absolute stems
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var records: [IdentityRecord] = []
        var rng = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15)
        func next() -> UInt64 { rng.next() }
        var seen = Set<String>()
        while records.count < rows {
            let number = "+1\(2 + next() % 8)\(next() % 100)\(2 + next() % 8)" + String(format: "%06d", next() % 1_000_000)
            guard number.count == 12, seen.insert(number).inserted else { continue }
            let i = records.count
            var record = IdentityRecord(number: number, name: "", category: i % 2 == 0 ? .person : .business, block: i % 7 == 0,
                                        cacheExpiryMinutes: UInt32(5 + i % 55))
            if i % 3 != 2 {  // a third have no identity
                record.name = "Caller \(i)"
                let base = try record.callIdentity()?.count ?? 0
                if identitySize > base { record.name += String(repeating: "x", count: min(identitySize - base, 4000)) }
            }
            records.append(record)
        }
        var absent: [String] = []
        while absent.count < 200 {
            let number = "+1555\(String(format: "%07d", next() % 10_000_000))"  // 555 numbers are never generated above? check
            if !seen.contains(number) { absent.append(number) }
        }
        let truth = LoadGenerator.Truth(present: try records.map { ($0.number, [$0.block ? 1 : 0], try $0.callIdentity()) }, absent: absent)
        let marker = "\(directory)/dataset.done"
        if reuse || (FileManager.default.fileExists(atPath: marker)
                     && (try? String(contentsOfFile: marker, encoding: .utf8)) == "\(rows) \(identitySize) \(blockShards) \(identityShards) \(preset.rawValue) \(corrupt) \(seed)") {
            return BenchDataset(directory: directory, truth: truth)
        }
        writeStderr("preparing \(rows) numbers (identity values \(identitySize) bytes) in \(directory)\n")
        let csv = ["number,name,category,block,cache_minutes"] + records.map {
            "\($0.number),\($0.name),\($0.category == .person ? "PERSON" : "BUSINESS"),\($0.block ? 1 : 0),\($0.cacheExpiryMinutes)"
        }
        try (csv.joined(separator: "\n") + "\n").write(toFile: "\(directory)/identities.csv", atomically: true, encoding: .utf8)
        var (blockDB, identityDB) = try IdentityDataset.keywordDatabases(records)
        try Data(try blockDB.serializedBytes() as [UInt8]).write(to: URL(fileURLWithPath: "\(directory)/block.binpb"))
        try Data(try identityDB.serializedBytes() as [UInt8]).write(to: URL(fileURLWithPath: "\(directory)/identity.binpb"))
        if corrupt {  // serve wrong block values; the truth above keeps the right ones
            for i in blockDB.rows.indices { blockDB.rows[i].value = Data([blockDB.rows[i].value.first.map { $0 ^ 1 } ?? 1]) }
        }
        func keywordRows(_ db: ProtoKeywordDatabase) -> [(keyword: [UInt8], value: [UInt8])] { db.rows.map { ([UInt8]($0.keyword), [UInt8]($0.value)) } }
        let encryption = EncryptionParameters(preset)
        var blockOptions = ProcessingOptions(encryption: encryption, shardCount: blockShards, sharding: .sha256)
        blockOptions.bucketCount = .allowExpansion(expansionFactor: 1.1, targetLoadFactor: 0.9)
        try DatabaseProcessingJob(options: blockOptions, outputStem: "\(directory)/block/shard").run(rows: keywordRows(blockDB))
        let identityOptions = ProcessingOptions(encryption: encryption, shardCount: identityShards, sharding: .sha256)
        try DatabaseProcessingJob(options: identityOptions, outputStem: "\(directory)/identity/shard").run(rows: keywordRows(identityDB))
        try "\(rows) \(identitySize) \(blockShards) \(identityShards) \(preset.rawValue) \(corrupt) \(seed)".write(toFile: marker, atomically: true, encoding: .utf8)
        return BenchDataset(directory: directory, truth: truth)
    }
}
