import ArgumentParser
import Foundation
import LookupClient
import LookupProtocol
import PIR
import BFV
import Dataset
import LoadGeneration

/// The bench's dataset: numbers with block decisions and identities of a chosen size, processed into shards,
/// and the truth the answers are checked against.
struct BenchDataset {
    static let block = "net.example.lookup.block"
    static let identity = "net.example.lookup.identity"

    let directory: String
    let truth: LoadGenerator.Truth

    static func prepare(directory: String, rows: Int, identitySize: Int, blockShards: Int, identityShards: Int, preset: String,
                        corrupt: Bool, reuse: Bool, seed: UInt64, acceptEither: String? = nil,
                        convergedMarker: String? = nil) throws -> BenchDataset {
        guard let preset = ParameterPreset(rawValue: preset) else { throw CleanExit.message("unknown preset \(preset)") }
        let directory = URL(fileURLWithPath: directory).standardizedFileURL.path  // the service config needs absolute stems
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if reuse {  // a dataset written earlier (by a bench run or by generate-demo/build-db): the truth is its CSV
            return BenchDataset(directory: directory,
                                truth: try truth(csv: "\(directory)/identities.csv", acceptEither: acceptEither,
                                                 convergedMarker: convergedMarker, seed: seed))
        }
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
        let truth = try LoadGenerator.Truth(records: records, absent: absentNumbers(avoiding: seen, seed: seed))
        let marker = "\(directory)/dataset.done"
        if FileManager.default.fileExists(atPath: marker)
            && (try? String(contentsOfFile: marker, encoding: .utf8)) == "\(rows) \(identitySize) \(blockShards) \(identityShards) \(preset.rawValue) \(corrupt) \(seed)" {
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

    /// 200 numbers in no dataset (`+1555…`, none of `seen`), chosen by `seed`.
    static func absentNumbers(avoiding seen: Set<String>, seed: UInt64) -> [String] {
        var rng = SplitMix64(seed: seed &* 0x2545_F491_4F6C_DD1D)
        var absent: [String] = []
        while absent.count < 200 {
            let number = "+1555\(String(format: "%07d", rng.next() % 10_000_000))"
            if !seen.contains(number) { absent.append(number) }
        }
        return absent
    }

    /// The truth of an identities CSV (the expected block and identity value of each number) and, with
    /// `acceptEither`, a second CSV whose differing rows are also accepted (a reload under way) until the file
    /// `convergedMarker` exists, and alone accepted after.
    static func truth(csv path: String, acceptEither: String?, convergedMarker: String?, seed: UInt64) throws -> LoadGenerator.Truth {
        func records(_ path: String) throws -> [IdentityRecord] {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw CleanExit.message("cannot read \(path)") }
            let (records, problems) = IdentityDataset.parseCSV(text)
            guard problems.isEmpty else { throw CleanExit.message("\(path): \(problems.prefix(3).map(\.description).joined(separator: "; "))") }
            return records
        }
        let main = try records(path)
        var seen = Set(main.map(\.number))
        var alternatives: [String: (block: [UInt8]?, identity: [UInt8]?)] = [:]
        if let acceptEither {
            let current = Dictionary(uniqueKeysWithValues: main.map { ($0.number, $0) })
            let other = try records(acceptEither)
            for record in other {
                let value: (block: [UInt8]?, identity: [UInt8]?) = (record.blockValue, try record.callIdentity())
                if let mine = current[record.number], mine.blockValue == value.block, try mine.callIdentity() == value.identity { continue }
                alternatives[record.number] = value
            }
            let otherNumbers = Set(other.map(\.number))
            for record in main where !otherNumbers.contains(record.number) { alternatives[record.number] = (nil, nil) }
            seen.formUnion(otherNumbers)
        }
        writeStderr("truth: \(main.count) numbers from \(path)\(acceptEither == nil ? "" : ", \(alternatives.count) of them may also answer as in \(acceptEither!)")\n")
        return try LoadGenerator.Truth(records: main, absent: absentNumbers(avoiding: seen, seed: seed), alternatives: alternatives,
                                   converged: { convergedMarker.map { FileManager.default.fileExists(atPath: $0) } ?? false })
    }
}
