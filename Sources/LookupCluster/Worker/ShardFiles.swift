import Cluster
import Foundation

/// Where a worker keeps compact shards: `<data dir>/<use case>/<config id hex>/shard-<n>-<sha256 prefix>.compact`
/// (and `.partial` while it arrives), with its scan-layout cache beside it (`….scan`, see `ScanFile`). The content hash in the name means a file is only ever resumed or reused
/// for the very content it holds, and files of content the worker no longer holds can be found and deleted.
struct ShardFiles: Sendable {
    let directory: String

    func folder(_ key: ShardKey) -> String {
        let safe = key.useCase.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" }
        return "\(directory)/\(String(safe))/\(key.configID.hexString)"
    }

    func path(_ key: ShardKey, sha256: [UInt8]) -> String {
        "\(folder(key))/shard-\(key.shard)-\(sha256.prefix(16).hexString).compact"
    }

    /// The scan-file cache of that content: the evaluation form derived once, mapped on later loads.
    func scanPath(_ key: ShardKey, sha256: [UInt8]) -> String {
        "\(folder(key))/shard-\(key.shard)-\(sha256.prefix(16).hexString).scan"
    }

    /// Deletes the files of shard `key` (complete and partial) except those of `keeping`.
    func removeFiles(of key: ShardKey, keeping: [UInt8]? = nil) {
        let folder = self.folder(key)
        let prefix = "shard-\(key.shard)-"
        let kept: [String] = keeping.map { sha in
            let compact = URL(fileURLWithPath: path(key, sha256: sha)).lastPathComponent
            return [compact, compact + ".partial", URL(fileURLWithPath: scanPath(key, sha256: sha)).lastPathComponent]
        } ?? []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
            if kept.contains(name) { continue }
            try? FileManager.default.removeItem(atPath: "\(folder)/\(name)")
        }
    }
}
