import BFV
import ConformanceSupport
import Foundation
import PIR
import Testing

/// The worker's scan-file cache: a mapped database answers exactly as the one built in memory, and a file that is
/// damaged, derived from other content or of another shape is refused instead of served.
@Suite("Scan files")
struct ScanFileTests {
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "callveil-scan-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func shard(rows count: Int, valueBytes: ClosedRange<Int>, using rng: inout TestRandom)
        throws -> (shard: ProcessedShard, context: Context, rows: [(keyword: [UInt8], value: [UInt8])]) {
        let encryption = EncryptionParameters(.n_4096_logq_27_28_28_logt_5)
        let context = try Context(parameters: encryption)
        let rows = (0..<count).map { i in
            (keyword: Array("+1555\(1_000_000 + i)".utf8),
             value: (0..<Int.random(in: valueBytes, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: 1, sharding: .sha256)[0]
        let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: ProcessingOptions(encryption: encryption),
                                                         maxValueLength: valueBytes.upperBound, context: context)
        return (shard, context, rows)
    }

    @Test("mapped and resident copies answer byte for byte as the in-memory server, every answer decrypted")
    func mappedAnswersMatch() throws {
        var rng = TestRandom()
        let (shard, context, rows) = try Self.shard(rows: 1500, valueBytes: 1...40, using: &rng)
        let memory = try MulPirServer(context: context, database: shard.database, threads: 2)
        #expect(memory.supportsScanFile)
        let path = try Self.directory() + "/shard.scan"
        let tag = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
        try memory.writeScanFile(path: path, tag: tag)
        let mapped = try MulPirServer(context: context, parameters: shard.parameters, scanFile: path, tag: tag, threads: 2)
        #expect(mapped.mappedBytes == memory.databaseBytes && mapped.mappedBytes > 0)
        let resident = try mapped.residentCopy()
        #expect(resident.mappedBytes == 0)
        try Self.expectSameAnswers([mapped, resident], as: memory, shard: shard, context: context, rows: rows, using: &rng)
    }

    /// Asks three listed numbers and an absent one of each of `servers` and of `reference`: every reply byte for byte
    /// the reference's, and every answer decrypted to the row's value (nil for the absent one).
    static func expectSameAnswers(_ servers: [MulPirServer], as reference: MulPirServer, shard: ProcessedShard, context: Context,
                                  rows: [(keyword: [UInt8], value: [UInt8])], using rng: inout TestRandom) throws {
        let sk = SecretKey(context: context)
        let key = try EvaluationKey(config: shard.evaluationKeyConfig, secretKey: sk)
        let client = try KeywordPirClient(context: context, shards: [shard.parameters], sharding: .sha256)
        var asked = (0..<3).map { _ in rows[Int.random(in: 0..<rows.count, using: &rng)] }.map { ($0.keyword, Optional($0.value)) }
        asked.append((Array("+15550000000".utf8), nil))
        for (keyword, expected) in asked {
            let (_, query) = try client.generateQuery(keyword: keyword, secretKey: sk)
            let calls = shard.parameters.batchSize
            let wanted = try reference.computeResponse(query: query, pirCalls: calls, evaluationKey: key)
            for server in servers {
                let replies = try server.computeResponse(query: query, pirCalls: calls, evaluationKey: key)
                #expect(replies.map { $0.map { $0.serialize() } } == wanted.map { $0.map { $0.serialize() } })
                #expect(try client.decrypt(replies: replies, keyword: keyword, secretKey: sk) == expected)
            }
        }
    }

    @Test("a flipped byte, a truncated file, another tag or another shape is refused with a reason")
    func damagedFilesRefused() throws {
        var rng = TestRandom()
        let (shard, context, _) = try Self.shard(rows: 300, valueBytes: 1...1, using: &rng)
        let server = try MulPirServer(context: context, database: shard.database, threads: 1)
        let directory = try Self.directory()
        let path = directory + "/shard.scan"
        let tag = [UInt8](repeating: 7, count: 32)
        try server.writeScanFile(path: path, tag: tag)
        let good = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(good.count % 4096 == 0)
        func refused(_ bytes: Data, tag: [UInt8] = tag, parameters: MulPirParameters = shard.parameters, because reason: String) throws {
            let damaged = directory + "/damaged.scan"
            try bytes.write(to: URL(fileURLWithPath: damaged))
            do {
                _ = try MulPirServer(context: context, parameters: parameters, scanFile: damaged, tag: tag)
                Issue.record("a damaged scan file was accepted (\(reason))")
            } catch let error as PIRError {
                #expect("\(error)".contains(reason), "\(error)")
            }
        }
        var flipped = good
        let at = Int.random(in: 4096..<good.count, using: &rng)
        flipped[at] ^= 0x10
        print("flipping byte \(at) of \(good.count)")
        try refused(flipped, because: "checksum mismatch")
        try refused(good.prefix(good.count - 4096), because: "expected")
        try refused(good, tag: [UInt8](repeating: 8, count: 32), because: "derived from other content")
        let other = try MulPirParameters(encryption: shard.parameters.encryption, entryCount: shard.parameters.entryCount,
                                         entrySize: shard.parameters.entrySize,
                                         dimensions: [shard.parameters.dimensions[0] + 1] + shard.parameters.dimensions.dropFirst(),
                                         batchSize: shard.parameters.batchSize)
        try refused(good, parameters: other, because: "shape")
        try refused(Data(good.prefix(50)), because: "not a scan file")
        // The original still maps.
        _ = try MulPirServer(context: context, parameters: shard.parameters, scanFile: path, tag: tag)
    }
}
