import LookupProtocol
import BFV
import Dispatch
import Foundation
import PIR

extension DatasetBuilder {
    /// One shard's outcome.
    struct Built: Sendable {
        let shard: DatasetManifest.Shard
        let parameters: ProtoPirParameters
        let rebuilt: Bool
        /// Plaintext slots encoded (every slot for a full build, the changed ones for an in-place update).
        let reencoded: Int
        let bytes: Int
    }

    /// Builds (or keeps) every shard on `threads` threads, then commits the version. `maxValueLength` is the
    /// largest value of the new version, or a bound on it.
    func finish(sources: [RowSource], maxValueLength: Int, previous: Previous?, staging: String,
                input: DatasetManifest.Input?, delta: DatasetManifest.Input?, overlay: DatasetOverlay?, readSeconds: Double) throws -> Report {
        var engine = try options.processingOptions()
        let context = try Context(parameters: engine.encryption)
        var bucketBytes = engine.maxSerializedBucketSize
            ?? CuckooTableConfig.defaultMaxSerializedBucketSize(maxValueLength: maxValueLength,
                                                                bytesPerPlaintext: engine.encryption.bytesPerPlaintext)
        // An update keeps the previous default bucket budget while the values fit it.
        if !relayout, engine.maxSerializedBucketSize == nil, let previous, previous.manifest.options == options,
           bucketBytes <= previous.manifest.bucketBytes {
            bucketBytes = previous.manifest.bucketBytes
        }
        engine.maxSerializedBucketSize = bucketBytes
        let sameLayout = previous.map { $0.manifest.options == options && $0.manifest.bucketBytes == bucketBytes
            && $0.manifest.shards.count == sources.count } ?? false
        let start = DispatchTime.now()
        let results = ResultSlots(count: sources.count)
        let progress = self.progress
        progress("build", 0, sources.count)
        DispatchQueue.concurrentPerform(iterations: min(threads, sources.count)) { [engine] _ in
            while let index = results.next() {
                do {
                    let built = try buildShard(index, source: sources[index], previous: previous, sameLayout: sameLayout,
                                               engine: engine, context: context, maxValueLength: maxValueLength, staging: staging)
                    progress("build", results.finish(index, built), sources.count)
                } catch {
                    results.fail(error)
                }
            }
        }
        let built = try results.all()
        let buildSeconds = Self.seconds(since: start)
        let manifest = try commit(built, bucketBytes: bucketBytes, maxValueLength: built.map(\.shard.maxValueLength).max() ?? 0,
                                  staging: staging, input: input, delta: delta, previous: previous, overlay: overlay, context: context)
        return Report(manifest: manifest, rebuilt: built.filter(\.rebuilt).map(\.shard.index),
                      plaintextsEncoded: built.reduce(0) { $0 + $1.reencoded },
                      bytesWritten: built.reduce(0) { $0 + $1.bytes }, readSeconds: readSeconds, buildSeconds: buildSeconds)
    }

    /// Builds shard `index` into the staging folder. With a previous version of the same layout (`sameLayout`), an
    /// unchanged shard is kept and a changed one is updated in place (`updateInPlace`) unless `relayout` is set,
    /// the previous version is of format 1, or the table would have to grow; otherwise the shard is laid out
    /// afresh from its rows.
    func buildShard(_ index: Int, source: RowSource, previous: Previous?, sameLayout: Bool, engine: ProcessingOptions,
                    context: Context, maxValueLength: Int, staging: String) throws -> Built {
        let rows: [ShardRow]
        switch source {
        case .delta(let entries):
            guard let previous else { throw DatasetError.processing("a delta needs a previous version") }
            if sameLayout, entries.isEmpty { return try keep(previous.manifest.shards[index], from: previous, staging: staging) }
            if sameLayout, !relayout, previous.manifest.shardsArePatchable {
                var prior = try PriorShard(index, of: previous, engine: engine, context: context)
                if let built = try updateInPlace(index, prior: &prior, changes: try prior.changes(applying: entries),
                                                 previous: previous, context: context, staging: staging) {
                    return built
                }
            }
            rows = try DatasetDelta.apply(entries, to: try previousRows(index, of: previous, engine: engine, context: context))
        case .spill(let path):
            rows = try ShardRowFile.read(path: path)
            if let previous, sameLayout {
                let old = previous.manifest.shards[index]
                if previous.manifest.shardsArePatchable {
                    var prior = try PriorShard(index, of: previous, engine: engine, context: context)
                    let changes = try prior.changes(becoming: rows)
                    if changes.isEmpty { return try keep(old, from: previous, staging: staging) }
                    if !relayout, let built = try updateInPlace(index, prior: &prior, changes: changes, previous: previous,
                                                                 context: context, staging: staging) {
                        return built
                    }
                } else if FileDigest.of(bytes: ShardRowFile.encode(rows, keepingLines: false)).sha256 == old.rowFile?.sha256 {
                    return try keep(old, from: previous, staging: staging)
                }
            }
        }
        var largest = 0
        let entries = try Self.entries(of: rows, largest: &largest)
        let output: ShardOutput
        do {
            output = try ShardOutput(entries: entries, options: engine, maxValueLength: maxValueLength)
        } catch {
            throw DatasetError.processing("shard \(index): \(error)")
        }
        let shardDigest = FileDigest.of(bytes: output.shardBytes), parameterDigest = FileDigest.of(bytes: output.parameterBytes)
        let shardName = shardFileName(index, "cvshard", sha256: shardDigest.sha256)
        let parameterName = shardFileName(index, "params.txtpb", sha256: parameterDigest.sha256)
        try Self.writeSynced(output.shardBytes, to: "\(staging)/\(shardName)")
        try Self.writeSynced(output.parameterBytes, to: "\(staging)/\(parameterName)")
        let entry = DatasetManifest.Shard(index: index, rows: rows.count, maxValueLength: largest,
                                          galoisElements: output.keyConfig.galoisElements.sorted(),
                                          shard: Self.file(shardName, shardDigest), parameters: Self.file(parameterName, parameterDigest),
                                          rowFile: nil)
        return Built(shard: entry, parameters: output.parameters, rebuilt: true, reencoded: output.plaintexts,
                     bytes: output.shardBytes.count + output.parameterBytes.count)
    }

    /// The rows of a previous shard: from its row file (format 1) or, in bucket order, from its shard file.
    func previousRows(_ index: Int, of previous: Previous, engine: ProcessingOptions, context: Context) throws -> [ShardRow] {
        let old = previous.manifest.shards[index]
        if let rowFile = old.rowFile, !previous.manifest.shardsArePatchable {
            return try ShardRowFile.decode(try DatasetManifest.contents(of: rowFile, directory: previous.directory), path: rowFile.path)
        }
        let prior = try PriorShard(index, of: previous, engine: engine, context: context)
        return prior.table.buckets.flatMap { $0.entries.map { ShardRow(hash: $0.keywordHash, line: 0, value: $0.value) } }
    }

    /// The cuckoo entries of a shard's rows; a repeated keyword is an error naming both input lines.
    static func entries(of rows: [ShardRow], largest: inout Int) throws -> [HashBucket.Entry] {
        var firstLine: [UInt64: UInt32] = [:]
        firstLine.reserveCapacity(rows.count)
        var entries: [HashBucket.Entry] = []
        entries.reserveCapacity(rows.count)
        for row in rows {
            if let first = firstLine.updateValue(row.line, forKey: row.hash) {
                throw DatasetError.duplicateKeyword(line: Int(row.line), firstLine: Int(first))
            }
            largest = max(largest, row.value.count)
            entries.append(HashBucket.Entry(keywordHash: row.hash, value: row.value))
        }
        return entries
    }

    /// A manifest file entry.
    static func file(_ name: String, _ digest: FileDigest) -> DatasetManifest.File {
        .init(path: name, bytes: digest.bytes, sha256: digest.sha256)
    }

    /// Keeps a previous shard: its entry stays; its files are linked (or copied) into staging when the new
    /// version goes to another folder.
    func keep(_ shard: DatasetManifest.Shard, from previous: Previous, staging: String) throws -> Built {
        let parameters = try previous.parameters(of: shard)
        try carry([shard.shard, shard.parameters, shard.rowFile].compactMap { $0 }, from: previous, staging: staging)
        return Built(shard: shard, parameters: parameters, rebuilt: false, reencoded: 0, bytes: 0)
    }

    /// Links (or copies) files of the previous version into staging when the new version goes to another folder.
    func carry(_ files: [DatasetManifest.File], from previous: Previous, staging: String) throws {
        guard URL(fileURLWithPath: previous.directory).standardized.path != URL(fileURLWithPath: directory).standardized.path else { return }
        for file in files {
            let from = "\(previous.directory)/\(file.path)"
            let to = "\(staging)/\(file.path)"
            if link(from, to) != 0 { try FileManager.default.copyItem(atPath: from, toPath: to) }
        }
    }

    /// Writes bytes and syncs them to disk.
    static func writeSynced(_ bytes: [UInt8], to path: String) throws {
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            try AtomicFile.sync(path: path)
        } catch let error as DatasetError {
            throw error
        } catch {
            throw DatasetError.unreadable(path: path, why: "cannot write: \(error)")
        }
    }
}

/// The shards' results as the build threads produce them: hands out indices, keeps the first error and stops
/// handing out work after it.
final class ResultSlots: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [DatasetBuilder.Built?]
    private var nextIndex = 0
    private var done = 0
    private var error: (any Error)?

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func next() -> Int? {
        lock.withLock {
            guard error == nil, nextIndex < slots.count else { return nil }
            defer { nextIndex += 1 }
            return nextIndex
        }
    }

    /// Records a result; returns how many shards are done.
    func finish(_ index: Int, _ built: DatasetBuilder.Built) -> Int {
        lock.withLock {
            slots[index] = built
            done += 1
            return done
        }
    }

    func fail(_ error: any Error) {
        lock.withLock { if self.error == nil { self.error = error } }
    }

    func all() throws -> [DatasetBuilder.Built] {
        try lock.withLock {
            if let error { throw error }
            return slots.compactMap { $0 }
        }
    }
}
