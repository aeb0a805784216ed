import LookupProtocol

/// What changed between two dataset versions, from their manifests alone: options, config id, and per shard
/// whether its content changed and by how many rows. A shard whose content hash is the same moves nowhere.
public struct ManifestDiff: Sendable, Equatable {
    /// One shard whose content differs.
    public struct ShardChange: Sendable, Equatable {
        /// Shard index.
        public let index: Int
        /// Rows before (nil: the shard is new).
        public let rowsBefore: Int?
        /// Rows after (nil: the shard is gone).
        public let rowsAfter: Int?
        /// Bytes of the new shard file (0 when gone).
        public let shardBytes: Int
    }

    /// Option names whose values differ.
    public let changedOptions: [String]
    /// Whether the config id is the same (devices keep their keys and cached configs).
    public let sameConfigID: Bool
    /// Shards whose content differs, by index.
    public let changed: [ShardChange]
    /// Shards with the same content.
    public let unchanged: Int
    /// Rows before and after.
    public let rows: (before: Int, after: Int)

    /// The difference from `old` to `new`.
    public init(from old: DatasetManifest, to new: DatasetManifest) {
        let a = old.options, b = new.options
        var options: [String] = []
        if a.preset != b.preset { options.append("preset") }
        if a.shardCount != b.shardCount { options.append("shardCount") }
        if a.sharding != b.sharding || a.otherShardCount != b.otherShardCount { options.append("sharding") }
        if a.hashFunctions != b.hashFunctions { options.append("hashFunctions") }
        if a.maxEvictions != b.maxEvictions { options.append("maxEvictions") }
        if a.fixedBucketCount != b.fixedBucketCount { options.append("fixedBucketCount") }
        if a.maxBucketSize != b.maxBucketSize || old.bucketBytes != new.bucketBytes { options.append("bucketBytes") }
        if a.keyCompression != b.keyCompression { options.append("keyCompression") }
        changedOptions = options
        sameConfigID = old.configID == new.configID
        var changed: [ShardChange] = []
        var unchanged = 0
        for index in 0..<max(old.shards.count, new.shards.count) {
            let before = index < old.shards.count ? old.shards[index] : nil
            let after = index < new.shards.count ? new.shards[index] : nil
            if let before, let after, before.shard.sha256 == after.shard.sha256 {
                unchanged += 1
            } else {
                changed.append(ShardChange(index: index, rowsBefore: before?.rows, rowsAfter: after?.rows, shardBytes: after?.shard.bytes ?? 0))
            }
        }
        self.changed = changed
        self.unchanged = unchanged
        rows = (old.rows, new.rows)
    }

    public static func == (l: ManifestDiff, r: ManifestDiff) -> Bool {
        l.changedOptions == r.changedOptions && l.sameConfigID == r.sameConfigID && l.changed == r.changed
            && l.unchanged == r.unchanged && l.rows == r.rows
    }

    /// A human-readable report, one fact per line.
    public var report: String {
        var lines: [String] = []
        lines.append("rows: \(rows.before) -> \(rows.after) (\(rows.after - rows.before >= 0 ? "+" : "")\(rows.after - rows.before))")
        lines.append("config id: \(sameConfigID ? "same (devices keep their configs and keys)" : "changed (devices fetch the new config)")")
        if !changedOptions.isEmpty { lines.append("options changed: \(changedOptions.joined(separator: ", "))") }
        let bytes = changed.reduce(0) { $0 + $1.shardBytes }
        lines.append("shards: \(changed.count) changed, \(unchanged) unchanged; \(bytes) bytes of changed shard files")
        for change in changed.prefix(200) {
            let before = change.rowsBefore.map(String.init) ?? "new"
            let after = change.rowsAfter.map(String.init) ?? "gone"
            lines.append("  shard \(change.index): rows \(before) -> \(after)")
        }
        if changed.count > 200 { lines.append("  … \(changed.count - 200) more") }
        return lines.joined(separator: "\n") + "\n"
    }
}
