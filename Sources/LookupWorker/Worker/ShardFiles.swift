import ClusterTransport
import Foundation

/// Where a worker keeps its shards: `<data dir>/<use case>/<config id hex>/shard-<n>-<sha256 prefix>.cvshard` (the
/// shard file as the coordinator sent it, and `.partial` while it arrives), with its scan-layout cache beside it (`….scan`, see `ScanFile`). The content hash in the name means a file is only ever resumed or reused
/// for the very content it holds, and files of content the worker no longer holds can be found and deleted.
struct ShardFiles: Sendable {
    let directory: String

    func folder(_ key: ShardKey) -> String {
        "\(directory)/\(FolderName.safe(key.useCase))/\(key.configID.hexString)"
    }

    /// The file names of one content of a shard: the shard file, its `.partial` while it arrives, and its scan
    /// file.
    func names(_ key: ShardKey, sha256: [UInt8]) -> (shard: String, partial: String, scan: String) {
        let stem = "shard-\(key.shard)-\(sha256.prefix(16).hexString)"
        return ("\(stem).cvshard", "\(stem).cvshard.partial", "\(stem).scan")
    }

    func path(_ key: ShardKey, sha256: [UInt8]) -> String {
        "\(folder(key))/\(names(key, sha256: sha256).shard)"
    }

    /// The scan-file cache of that content: the evaluation form derived once, mapped on later loads.
    func scanPath(_ key: ShardKey, sha256: [UInt8]) -> String {
        "\(folder(key))/\(names(key, sha256: sha256).scan)"
    }

    /// Deletes the files of one content of shard `key` (complete, partial and scan file).
    func removeFiles(of key: ShardKey, content sha256: [UInt8]) {
        let (shard, partial, scan) = names(key, sha256: sha256)
        for name in [shard, partial, scan] { try? FileManager.default.removeItem(atPath: "\(folder(key))/\(name)") }
    }

    /// Deletes the files of shard `key` (complete, partial and scan files) except those of `keeping`.
    func removeFiles(of key: ShardKey, keeping: [UInt8]? = nil) {
        let folder = self.folder(key)
        let prefix = "shard-\(key.shard)-"
        let kept = keeping.map { sha -> [String] in
            let (shard, partial, scan) = names(key, sha256: sha)
            return [shard, partial, scan]
        } ?? []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
            if kept.contains(name) { continue }
            try? FileManager.default.removeItem(atPath: "\(folder)/\(name)")
        }
    }
}
