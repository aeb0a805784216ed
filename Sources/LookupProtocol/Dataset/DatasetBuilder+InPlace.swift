import BFV
import Foundation
import PIR

extension DatasetBuilder {
    /// Updates shard `index` of `previous` in place to hold `rows`: restores its cuckoo table from the placed row
    /// file (`before`), removes, changes and adds only what differs, encodes only the plaintexts of the buckets that
    /// changed and writes them over a copy of the previous shard file. Returns nil when the additions need a larger
    /// table or a larger entry size, and the caller lays the shard out afresh.
    func updateInPlace(_ index: Int, rows: [ShardRow], before: (rows: [ShardRow], placements: [CuckooTable.Placement]),
                       previous: Previous, engine: ProcessingOptions, context: Context, staging: String) throws -> Built? {
        let old = previous.manifest.shards[index]
        var largest = 0
        let entries = try Self.entries(of: rows, largest: &largest)
        var was: [UInt64: Int] = [:]
        was.reserveCapacity(before.rows.count)
        for (i, row) in before.rows.enumerated() { was[row.hash] = i }
        var changes: [HashBucket.Entry] = []
        var additions: [HashBucket.Entry] = []
        var kept = Set<UInt64>(minimumCapacity: rows.count)
        for entry in entries {
            if let i = was[entry.keywordHash] {
                kept.insert(entry.keywordHash)
                if before.rows[i].value != entry.value { changes.append(entry) }
            } else {
                additions.append(entry)
            }
        }
        let removals = before.rows.lazy.map(\.hash).filter { !kept.contains($0) }
        let parameters = try previousParameters(old, of: previous)
        let pir: MulPirParameters
        do {
            pir = try parameters.native()
        } catch {
            throw DatasetError.badManifest("\(old.parameters.path): \(error)")
        }
        var table: CuckooTable
        let touched: Set<Int>?
        do {
            let config = try CuckooTableConfig(hashFunctionCount: engine.hashFunctionCount, maxEvictionCount: engine.maxEvictionCount,
                                               maxSerializedBucketSize: previous.manifest.bucketBytes, bucketCount: engine.bucketCount)
            table = try CuckooTable(config: config, bucketsPerTable: pir.entryCount,
                                    placed: before.rows.map { HashBucket.Entry(keywordHash: $0.hash, value: $0.value) },
                                    at: before.placements)
            touched = try table.update(removing: Array(removals), changing: changes, adding: additions)
        } catch {
            throw DatasetError.processing("shard \(index): \(error)")
        }
        guard let touched, table.maxBucketSize <= pir.entrySize else { return nil }
        let slots = try ProcessedDatabase.changedSlots(of: table, buckets: touched, parameters: pir, context: context)
        var shardBytes = try DatasetManifest.contents(of: old.shard, directory: previous.directory)
        do {
            try ShardFile.patch(&shardBytes, with: slots, context: context)
        } catch {
            throw DatasetError.processing("shard \(index): \(error)")
        }
        let rowBytes = try ShardRowFile.encode(rows, placements: table.placements())
        let names = fileNames(index)
        try Self.writeSynced(shardBytes, to: "\(staging)/\(names.shard)")
        try Self.writeSynced(rowBytes, to: "\(staging)/\(names.rows)")
        try carry([old.parameters], from: previous, staging: staging)
        let entry = DatasetManifest.Shard(index: index, rows: rows.count, maxValueLength: largest, galoisElements: old.galoisElements,
                                          shard: Self.file(names.shard, FileDigest.of(bytes: shardBytes)),
                                          parameters: old.parameters, rowFile: Self.file(names.rows, FileDigest.of(bytes: rowBytes)))
        return Built(shard: entry, parameters: parameters, rebuilt: true, reencoded: slots.count, bytes: shardBytes.count + rowBytes.count)
    }
}
