import BFV
import ConformanceSupport
import Dataset
import Foundation
import LookupProtocol
import PIR
import Testing

/// The streamed, incremental dataset build: byte-identical to the in-memory path and to a full rebuild, no row
/// lost at a million rows, malformed input reported by line, and nothing half-written left by a failure.
@Suite("Dataset builds: streamed, incremental, atomic")
struct DatasetBuildTests {
    typealias Row = (keyword: [UInt8], value: [UInt8])

    static func folder(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "callveil-dataset-\(name)-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func rows(_ count: Int, maxValue: Int, using rng: inout TestRandom) -> [Row] {
        var seen = Set<UInt64>()
        var rows: [Row] = []
        while rows.count < count {
            let number = UInt64.random(in: 2_000_000_000...9_999_999_999, using: &rng)
            guard seen.insert(number).inserted else { continue }
            let value = (0..<Int.random(in: 1...maxValue, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            rows.append((Array("+1\(number)".utf8), value))
        }
        return rows
    }

    static func writeCSV(_ rows: [Row], to path: String) throws {
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        let text = "keyword,value\n" + rows.map { "\(String(decoding: $0.keyword, as: UTF8.self)),\(hex($0.value))\n" }.joined()
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }

    /// Random rows, a fresh folder and the options of a small three-shard version with fixed tables.
    static func threeShards(_ name: String, rows count: Int, maxValue: Int, buckets: Int, using rng: inout TestRandom) throws
        -> (rows: [Row], root: String, options: DatasetManifest.Options) {
        let options = DatasetManifest.Options(preset: ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue, shardCount: 3,
                                              fixedBucketCount: buckets, maxBucketSize: 128)
        return (rows(count, maxValue: maxValue, using: &rng), try folder(name), options)
    }

    /// The path of a file of shard `index` (`cvshard` or `params.txtpb`) or of the key config (index nil) in an
    /// output folder: the one its manifest names, or the fixed name of `DatabaseProcessingJob`'s output.
    static func path(in directory: String, shard index: Int?, _ kind: String) -> String {
        guard let manifest = try? DatasetManifest.read(path: "\(directory)/shard.manifest.json") else {
            return index.map { "\(directory)/shard-\($0).\(kind)" } ?? "\(directory)/shard.evaluation-key-config.txtpb"
        }
        guard let index else { return "\(directory)/\(manifest.keyConfig.path)" }
        return "\(directory)/\(kind == "cvshard" ? manifest.shards[index].shard.path : manifest.shards[index].parameters.path)"
    }

    /// Every shard file, parameters file and the key config of two outputs, byte for byte.
    static func expectSameShards(_ a: String, _ b: String, shards: Int) {
        for i in 0..<shards {
            for suffix in ["cvshard", "params.txtpb"] {
                let (x, y) = (bytes(path(in: a, shard: i, suffix)), bytes(path(in: b, shard: i, suffix)))
                #expect(x != nil && x == y, "shard-\(i).\(suffix) differs")
            }
        }
        #expect(bytes(path(in: a, shard: nil, "")) == bytes(path(in: b, shard: nil, "")))
    }

    /// Every row the shard files of a version hold, read back from their plaintexts' buckets (a row found twice is
    /// an issue).
    static func rowsInShards(_ directory: String, _ manifest: DatasetManifest) throws -> [UInt64: [UInt8]] {
        let context = try Context(parameters: try manifest.options.processingOptions().encryption)
        var found: [UInt64: [UInt8]] = [:]
        for shard in manifest.shards {
            let parameters = try ProtoPirParameters(textFormatString: try String(contentsOfFile: "\(directory)/\(shard.parameters.path)",
                                                                                 encoding: .utf8)).native()
            let contents = try ShardFile.deserialize(Self.bytes("\(directory)/\(shard.shard.path)") ?? [], context: context)
            let size = parameters.entrySize
            for plaintext in contents.tables.joined() {
                guard let plaintext else { continue }
                let bytes = BytePacking.bytes(from: try context.plaintext(fromEval: plaintext).values,
                                              bitsPerCoefficient: parameters.bitsPerCoefficient)
                for bucket in 0..<(parameters.bytesPerPlaintext / size) {
                    for entry in try HashBucket(deserialize: bytes[(bucket * size)..<((bucket + 1) * size)]).entries {
                        #expect(found.updateValue(entry.value, forKey: entry.keywordHash) == nil, "a row appears twice")
                    }
                }
            }
        }
        return found
    }

    @Test("the streamed build and the in-memory path write byte-identical shards (CSV and .binpb input)")
    func streamedEqualsInMemory() throws {
        var rng = TestRandom()
        let rows = Self.rows(4000, maxValue: 60, using: &rng)
        let options = DatasetManifest.Options(preset: ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue, shardCount: 5)
        let root = try Self.folder("same")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try DatabaseProcessingJob(options: try options.processingOptions(), outputStem: "\(root)/memory/shard").run(rows: rows)
        try Self.writeCSV(rows, to: "\(root)/in.csv")
        let report = try DatasetBuilder(options: options, directory: "\(root)/csv", stem: "shard", threads: 2).build(input: "\(root)/in.csv")
        #expect(report.manifest.rows == 4000 && report.rebuilt == [0, 1, 2, 3, 4])
        Self.expectSameShards("\(root)/memory", "\(root)/csv", shards: 5)
        var database = ProtoKeywordDatabase()
        database.rows = rows.map { row in .with { $0.keyword = Data(row.keyword); $0.value = Data(row.value) } }
        try Data(try database.serializedBytes() as [UInt8]).write(to: URL(fileURLWithPath: "\(root)/in.binpb"))
        _ = try DatasetBuilder(options: options, directory: "\(root)/binpb", stem: "shard", threads: 1).build(input: "\(root)/in.binpb")
        Self.expectSameShards("\(root)/memory", "\(root)/binpb", shards: 5)
        try report.manifest.verify(directory: "\(root)/csv")
    }

    @Test("The load factor a full build reports: near full for a fresh layout, a sliver of the table for a fixed bucket count far beyond the rows")
    func loadFactor() throws {
        var rng = TestRandom()
        let rows = Self.rows(600, maxValue: 12, using: &rng)
        let root = try Self.folder("fill")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.writeCSV(rows, to: "\(root)/in.csv")
        let valueBytes = rows.reduce(0) { $0 + $1.value.count }
        func fill(_ fixed: Int?) throws -> TableFill {
            let options = DatasetManifest.Options(preset: ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue, shardCount: 2, fixedBucketCount: fixed)
            let directory = "\(root)/\(fixed ?? 0)"
            let report = try DatasetBuilder(options: options, directory: directory, stem: "shard", threads: 2).build(input: "\(root)/in.csv")
            #expect(report.valueBytes == valueBytes)
            return try TableFill.of(manifestPath: "\(directory)/shard.manifest.json", valueBytes: try #require(report.valueBytes))
        }
        let fresh = try fill(nil), oversized = try fill(4096)
        #expect(fresh.used == 600 * 10 + valueBytes && oversized.used == fresh.used)
        #expect(fresh.fraction > 0.5 && fresh.fraction <= 1, "fresh layout: \(fresh)")
        #expect(oversized.buckets == 2 * 4096 && oversized.fraction < 0.01, "fixed 4096 buckets per shard: \(oversized)")
        #expect(oversized.bucketsForHalfFull(shards: 2) < 100)
    }

    @Test("a delta and a new full input update only the changed shards in place, byte-identical to each other and holding exactly the new rows; --relayout is byte-identical to a full rebuild")
    func incrementalEqualsFullRebuild() throws {
        var rng = TestRandom()
        var rows = Self.rows(3000, maxValue: 40, using: &rng)
        let options = DatasetManifest.Options(preset: ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue, shardCount: 8,
                                              fixedBucketCount: 1024, maxBucketSize: 256)
        let engine = try options.processingOptions()
        let root = try Self.folder("delta")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.writeCSV(rows, to: "\(root)/v1.csv")
        let v1 = try DatasetBuilder(options: options, directory: "\(root)/live", stem: "shard").build(input: "\(root)/v1.csv").manifest
        try FileManager.default.copyItem(atPath: "\(root)/live", toPath: "\(root)/v1")

        // Changes in at most a few shards, one of them a value too large for its bucket's room; the rows edited
        // the way the delta says.
        let fresh = Self.rows(3, maxValue: 40, using: &rng).filter { f in !rows.contains { $0.keyword == f.keyword } }
        var delta = "op,keyword,value\n"
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        let removed = rows[17].keyword, changed = rows[2000].keyword, changedValue: [UInt8] = [9, 9, 9]
        let grown = rows[1000].keyword, grownValue = [UInt8](repeating: 5, count: 200)
        delta += "remove,\(String(decoding: removed, as: UTF8.self))\n"
        delta += "change,\(String(decoding: changed, as: UTF8.self)),\(hex(changedValue))\n"
        delta += "change,\(String(decoding: grown, as: UTF8.self)),\(hex(grownValue))\n"
        for row in fresh { delta += "add,\(String(decoding: row.keyword, as: UTF8.self)),\(hex(row.value))\n" }
        try delta.write(toFile: "\(root)/delta.csv", atomically: true, encoding: .utf8)
        rows[2000].value = changedValue
        rows[1000].value = grownValue
        rows.remove(at: 17)
        rows += fresh
        let touched = Set(([removed, changed, grown] + fresh.map(\.keyword)).map {
            engine.sharding.shardIndex(keywordHash: KeywordHash.hash($0), shardCount: 8)
        })
        let untouched = (0..<8).filter { !touched.contains($0) }
        func inode(_ path: String) throws -> Int { try (FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? NSNumber)?.intValue ?? -1 }
        let inodesBefore = try untouched.map { try inode(Self.path(in: "\(root)/live", shard: $0, "cvshard")) }

        let previous = try DatasetBuilder.Previous(manifestPath: "\(root)/live/shard.manifest.json")
        let report = try DatasetBuilder(options: options, directory: "\(root)/live", stem: "shard").apply(delta: "\(root)/delta.csv", to: previous)
        #expect(Set(report.rebuilt) == touched)
        let slotsPerShard = 2 * 512 / 8  // two sub-tables of 512 buckets of 256 bytes, 8 buckets per 2,560-byte plaintext
        #expect(report.plaintextsEncoded > 0 && report.plaintextsEncoded < touched.count * slotsPerShard / 4,
                "\(report.plaintextsEncoded) plaintexts encoded for \(touched.count) changed shards")
        #expect(report.manifest.configID == v1.configID, "a fixed shard configuration keeps the config id")
        #expect(report.manifest.rows == rows.count)
        #expect(try untouched.map { try inode(Self.path(in: "\(root)/live", shard: $0, "cvshard")) } == inodesBefore, "kept shards are not rewritten")
        try report.manifest.verify(directory: "\(root)/live")

        // The version holds exactly the edited rows, as a full rebuild of the edited input does.
        try Self.writeCSV(rows, to: "\(root)/v2.csv")
        let full = try DatasetBuilder(options: options, directory: "\(root)/full", stem: "shard").build(input: "\(root)/v2.csv").manifest
        let expected = Dictionary(uniqueKeysWithValues: rows.map { (KeywordHash.hash($0.keyword), $0.value) })
        #expect(try Self.rowsInShards("\(root)/live", report.manifest) == expected)
        #expect(try Self.rowsInShards("\(root)/full", full) == expected)

        // The same update as a new full input against the first version, into another folder: the same bytes.
        let fromV1 = try DatasetBuilder.Previous(manifestPath: "\(root)/v1/shard.manifest.json")
        let again = try DatasetBuilder(options: options, directory: "\(root)/v2", stem: "shard").build(input: "\(root)/v2.csv", previous: fromV1)
        #expect(Set(again.rebuilt) == touched)
        Self.expectSameShards("\(root)/v2", "\(root)/live", shards: 8)
        try again.manifest.verify(directory: "\(root)/v2")

        // --relayout: from the new full input, byte-identical to the full rebuild; from the delta, the same rows.
        var relayout = DatasetBuilder(options: options, directory: "\(root)/relaid", stem: "shard")
        relayout.relayout = true
        let relaid = try relayout.build(input: "\(root)/v2.csv", previous: fromV1)
        #expect(Set(relaid.rebuilt) == touched && relaid.plaintextsEncoded == touched.count * slotsPerShard)
        Self.expectSameShards("\(root)/relaid", "\(root)/full", shards: 8)
        relayout = DatasetBuilder(options: options, directory: "\(root)/relaid-delta", stem: "shard")
        relayout.relayout = true
        let relaidDelta = try relayout.apply(delta: "\(root)/delta.csv", to: fromV1)
        #expect(Set(relaidDelta.rebuilt) == touched && relaidDelta.plaintextsEncoded == touched.count * slotsPerShard)
        #expect(try Self.rowsInShards("\(root)/relaid-delta", relaidDelta.manifest) == expected)

        let diff = ManifestDiff(from: v1, to: report.manifest)
        #expect(Set(diff.changed.map(\.index)) == touched && diff.unchanged == untouched.count && diff.sameConfigID)
    }

    @Test("a million rows: every row is in its shard file exactly once, with its value")
    func millionRowsNoneLost() throws {
        var rng = TestRandom()
        let root = try Self.folder("million")
        defer { try? FileManager.default.removeItem(atPath: root) }
        var expected: [UInt64: UInt8] = [:]
        expected.reserveCapacity(1_000_000)
        var text = "keyword,value\n"
        text.reserveCapacity(20_000_000)
        let base = UInt64.random(in: 2_000_000_000...8_000_000_000, using: &rng)
        for i in 0..<1_000_000 {
            let keyword = "+1\(base + UInt64(i) * 7)"
            let value = UInt8.random(in: 0...255, using: &rng)
            expected[KeywordHash.hash(Array(keyword.utf8))] = value
            text += "\(keyword),\(String(format: "%02x", value))\n"
        }
        try text.write(toFile: "\(root)/in.csv", atomically: true, encoding: .utf8)
        text = ""
        let options = DatasetManifest.Options(preset: ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue, shardCount: 8)
        let manifest = try DatasetBuilder(options: options, directory: "\(root)/out", stem: "shard").build(input: "\(root)/in.csv").manifest
        #expect(manifest.rows == 1_000_000)
        let found = try Self.rowsInShards("\(root)/out", manifest)
        #expect(found.count == 1_000_000)
        let wrong = found.filter { expected.removeValue(forKey: $0.key).map { [$0] } != $0.value }
        #expect(wrong.isEmpty && expected.isEmpty, "\(expected.count) rows missing, \(wrong.count) extra or changed in the shard files")
    }

    @Test("malformed rows are reported with their line numbers and a failed build leaves the previous version in place")
    func failuresLeaveNothingBehind() throws {
        var rng = TestRandom()
        let (rows, root, options) = try Self.threeShards("fail", rows: 500, maxValue: 20, buckets: 512, using: &rng)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.writeCSV(rows, to: "\(root)/good.csv")
        let builder = DatasetBuilder(options: options, directory: "\(root)/out", stem: "shard")
        let manifest = try builder.build(input: "\(root)/good.csv").manifest
        func snapshot() throws -> [String: [UInt8]] {
            var files: [String: [UInt8]] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: "\(root)/out") { files[name] = Self.bytes("\(root)/out/\(name)") }
            return files
        }
        let before = try snapshot()

        var lines = try String(contentsOfFile: "\(root)/good.csv", encoding: .utf8).split(separator: "\n").map(String.init)
        lines[3] = "no comma here"
        lines[7] = "+15551234567,zz!"
        lines[9] = "a,b,c"
        try (lines.joined(separator: "\n") + "\n").write(toFile: "\(root)/bad.csv", atomically: true, encoding: .utf8)
        #expect {
            try builder.build(input: "\(root)/bad.csv")
        } throws: { error in
            guard let error = error as? DatasetError, error.code == .malformedLines else { return false }
            let problems = error.problems
            return problems.map(\.line) == [4, 8, 10]
        }
        lines = try String(contentsOfFile: "\(root)/good.csv", encoding: .utf8).split(separator: "\n").map(String.init)
        lines.append(lines[5])
        try (lines.joined(separator: "\n") + "\n").write(toFile: "\(root)/dup.csv", atomically: true, encoding: .utf8)
        #expect(throws: DatasetError.duplicateKeyword(line: lines.count, firstLine: 6)) { try builder.build(input: "\(root)/dup.csv") }
        // A failure in the parallel build phase: the fixed table cannot hold this many rows.
        let tooMany = Self.rows(12_000, maxValue: 20, using: &rng)
        try Self.writeCSV(tooMany, to: "\(root)/big.csv")
        #expect(throws: DatasetError.self) { try builder.build(input: "\(root)/big.csv") }
        // A delta naming an absent keyword.
        try "op,keyword,value\nremove,+19999999999\n".write(toFile: "\(root)/delta.csv", atomically: true, encoding: .utf8)
        let previous = try DatasetBuilder.Previous(manifestPath: "\(root)/out/shard.manifest.json")
        #expect(throws: DatasetError.deltaConflict(line: 2, why: "names a keyword the previous version does not have")) {
            try builder.apply(delta: "\(root)/delta.csv", to: previous)
        }

        #expect(try snapshot() == before, "a failed build changed the output folder")
        try DatasetManifest.read(path: "\(root)/out/shard.manifest.json").verify(directory: "\(root)/out")
        #expect(try DatasetManifest.read(path: "\(root)/out/shard.manifest.json") == manifest)
    }

    /// Collects the commit steps a run passes, and stops a run at one of them.
    final class CommitProbe: @unchecked Sendable {
        let lock = NSLock()
        var steps: [DatasetBuilder.CommitStep] = []
        func add(_ step: DatasetBuilder.CommitStep) { lock.withLock { steps.append(step) } }
    }

    struct Stop: Error {}

    @Test("a crash or an error at every step of a commit leaves the old version or the new one whole, and the next run works")
    func crashAtEveryStep() throws {
        var rng = TestRandom()
        let (rows, root, options) = try Self.threeShards("crash", rows: 400, maxValue: 16, buckets: 256, using: &rng)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.writeCSV(rows, to: "\(root)/v1.csv")
        let v1 = try DatasetBuilder(options: options, directory: "\(root)/v1", stem: "shard").build(input: "\(root)/v1.csv").manifest
        let v1Rows = try Self.rowsInShards("\(root)/v1", v1)
        // `set` lines, so that a run after a crash that already committed applies the same delta again harmlessly.
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        var delta = "op,keyword,value\n"
        for i in [3, 50, 120, 260, 399] { delta += "set,\(String(decoding: rows[i].keyword, as: UTF8.self)),\(hex([UInt8(i % 256), 7]))\n" }
        delta += "set,+19995550100,0102\n"
        try delta.write(toFile: "\(root)/delta.csv", atomically: true, encoding: .utf8)
        func run(_ directory: String, hook: (@Sendable (DatasetBuilder.CommitStep) throws -> Void)?) throws -> DatasetManifest {
            var builder = DatasetBuilder(options: options, directory: directory, stem: "shard", threads: 1)
            builder.onCommitStep = hook
            return try builder.apply(delta: "\(root)/delta.csv", to: try DatasetBuilder.Previous(manifestPath: "\(directory)/shard.manifest.json")).manifest
        }
        try FileManager.default.copyItem(atPath: "\(root)/v1", toPath: "\(root)/reference")
        let probe = CommitProbe()
        let v2 = try run("\(root)/reference", hook: { probe.add($0) })
        let v2Rows = try Self.rowsInShards("\(root)/reference", v2)
        #expect(v2Rows != v1Rows && v2.shards != v1.shards)
        let steps = probe.steps
        #expect(steps.count >= 6 && steps.first == .staged && steps.last == .collected, "\(steps)")

        /// The folder holds one whole version, the old or the new (by the step), and a next run commits the new one
        /// and leaves only the files of the two.
        func expectRecoverable(_ directory: String, committed: Bool, _ what: String) throws {
            let manifest = try DatasetManifest.read(path: "\(directory)/shard.manifest.json")
            try manifest.verify(directory: directory)
            #expect(manifest == (committed ? v2 : v1), "\(what): the live manifest")
            #expect(try Self.rowsInShards(directory, manifest) == (committed ? v2Rows : v1Rows), "\(what): the live rows")
            let next = try run(directory, hook: nil)
            try next.verify(directory: directory)
            #expect(next.shards == v2.shards && next.keyConfig == v2.keyConfig, "\(what): the next run's version")
            #expect(try Self.rowsInShards(directory, next) == v2Rows, "\(what): the next run's rows")
            let named = Set((next.files + (committed ? v2.files : v1.files)).map(\.path) + ["shard.manifest.json"])
            let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory))
            #expect(left.subtracting(named).isEmpty, "\(what): files left over: \(left.subtracting(named).sorted())")
        }

        for (k, step) in steps.enumerated() {
            let committed = steps.firstIndex(of: .manifestReplaced).map { k >= $0 } ?? false
            // An error at this step: the run stops there and cleans up what it can.
            let failed = "\(root)/error-\(k)"
            try FileManager.default.copyItem(atPath: "\(root)/v1", toPath: failed)
            #expect(throws: Stop.self) { try run(failed, hook: { if $0 == step { throw Stop() } }) }
            try expectRecoverable(failed, committed: committed, "error at \(step)")
            // A crash at this step: the folder exactly as it was then, with the dead process's temporary files.
            let live = "\(root)/live-\(k)", crashed = "\(root)/crash-\(k)"
            try FileManager.default.copyItem(atPath: "\(root)/v1", toPath: live)
            _ = try? run(live, hook: { if $0 == step { try FileManager.default.copyItem(atPath: live, toPath: crashed); throw Stop() } })
            let pid = getpid(), dead = Int32.max
            for name in try FileManager.default.contentsOfDirectory(atPath: crashed) where name.hasSuffix("-\(pid)") {
                try FileManager.default.moveItem(atPath: "\(crashed)/\(name)", toPath: "\(crashed)/\(name.dropLast("\(pid)".count))\(dead)")
            }
            try expectRecoverable(crashed, committed: committed, "crash at \(step)")
        }
    }
}
