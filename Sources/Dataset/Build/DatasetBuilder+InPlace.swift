import LookupProtocol
import BFV
import Foundation
import PIR

extension DatasetBuilder {
    /// A shard of the previous version, read for an in-place update: its file (checked against the manifest), its
    /// parameters, and the cuckoo table restored from the file's payloads.
    struct PriorShard {
        /// The shard file's bytes.
        var bytes: [UInt8]
        /// Its parameters as written.
        let parameters: ProtoPirParameters
        /// The same, checked.
        let pir: MulPirParameters
        /// The restored table.
        var table: CuckooTable

        /// Reads shard `index` of `previous` (format 2).
        init(_ index: Int, of previous: Previous, engine: ProcessingOptions, context: Context) throws {
            let old = previous.manifest.shards[index]
            parameters = try previous.parameters(of: old)
            do {
                pir = try parameters.native()
            } catch {
                throw DatasetError.badManifest("\(previous.directory)/\(old.parameters.path): \(error)")
            }
            bytes = try DatasetManifest.contents(of: old.shard, directory: previous.directory)
            do {
                let config = try CuckooTableConfig(hashFunctionCount: engine.hashFunctionCount, maxEvictionCount: engine.maxEvictionCount,
                                                   maxSerializedBucketSize: previous.manifest.bucketBytes, bucketCount: engine.bucketCount)
                table = try KeywordDatabaseProcessor.restore(payloads: try ShardFile.payloads(bytes, context: context), parameters: pir,
                                                             config: config)
            } catch {
                throw DatasetError.badManifest("\(previous.directory)/\(old.shard.path): \(error)")
            }
        }

        /// What turns this shard's rows into `rows`; a keyword repeated in `rows` is an error naming both lines.
        func changes(becoming rows: [ShardRow]) throws -> Changes {
            var was: [UInt64: [UInt8]] = [:]
            was.reserveCapacity(table.entryCount)
            for bucket in table.buckets { for entry in bucket.entries { was[entry.keywordHash] = entry.value } }
            var firstLine: [UInt64: UInt32] = [:]
            firstLine.reserveCapacity(rows.count)
            var changes = Changes()
            for row in rows {
                if let first = firstLine.updateValue(row.line, forKey: row.hash) {
                    throw DatasetError.duplicateKeyword(line: Int(row.line), firstLine: Int(first))
                }
                switch was[row.hash] {
                case nil: changes.additions.append(HashBucket.Entry(keywordHash: row.hash, value: row.value))
                case let value? where value != row.value: changes.changes.append(HashBucket.Entry(keywordHash: row.hash, value: row.value))
                default: break
                }
            }
            changes.removals = was.keys.filter { firstLine[$0] == nil }
            return changes
        }

        /// What a delta's lines for this shard do; adding a present keyword, or changing or removing an absent one,
        /// is an error naming the delta line.
        func changes(applying entries: [DatasetDelta.Entry]) throws -> Changes {
            var changes = Changes()
            for entry in entries {
                let present = table.position(ofKeywordHash: entry.hash) != nil
                try entry.check(present: present)
                switch entry.operation {
                case .add(let value): changes.additions.append(HashBucket.Entry(keywordHash: entry.hash, value: value))
                case .change(let value): changes.changes.append(HashBucket.Entry(keywordHash: entry.hash, value: value))
                case .set(let value):
                    let row = HashBucket.Entry(keywordHash: entry.hash, value: value)
                    if present { changes.changes.append(row) } else { changes.additions.append(row) }
                case .remove: changes.removals.append(entry.hash)
                }
            }
            return changes
        }
    }

    /// The rows an update removes, changes and adds in one shard.
    struct Changes {
        var removals: [UInt64] = []
        var changes: [HashBucket.Entry] = []
        var additions: [HashBucket.Entry] = []

        var isEmpty: Bool { removals.isEmpty && changes.isEmpty && additions.isEmpty }
    }

    /// Updates shard `index` in place: applies `changes` to the restored table, encodes only the plaintexts of the
    /// buckets that changed and writes them over a copy of the previous shard file. Returns nil when the table
    /// would have to grow or a bucket outgrows the entry size, and the caller lays the shard out afresh.
    func updateInPlace(_ index: Int, prior: inout PriorShard, changes: Changes, previous: Previous, context: Context,
                       staging: String) throws -> Built? {
        let old = previous.manifest.shards[index]
        let slots: [ProcessedDatabase.ChangedSlot]
        do {
            guard let touched = try prior.table.update(removing: changes.removals, changing: changes.changes, adding: changes.additions),
                  prior.table.maxBucketSize <= prior.pir.entrySize else { return nil }
            slots = try ProcessedDatabase.changedSlots(of: prior.table, buckets: touched, parameters: prior.pir)
            try ShardFile.patch(&prior.bytes, with: slots, context: context)
        } catch {
            throw DatasetError.processing("shard \(index): \(error)")
        }
        let digest = FileDigest.of(bytes: prior.bytes)
        let name = shardFileName(index, "cvshard", sha256: digest.sha256)
        try Self.writeSynced(prior.bytes, to: "\(staging)/\(name)")
        try carry([old.parameters], from: previous, staging: staging)
        let largest = prior.table.buckets.reduce(0) { max($0, $1.entries.reduce(0) { max($0, $1.value.count) }) }
        let entry = DatasetManifest.Shard(index: index, rows: prior.table.entryCount, maxValueLength: largest,
                                          galoisElements: old.galoisElements, shard: Self.file(name, digest),
                                          parameters: old.parameters, rowFile: nil)
        return Built(shard: entry, parameters: prior.parameters, rebuilt: true, reencoded: slots.count, bytes: prior.bytes.count)
    }
}
