import Cluster
import Foundation

/// Where a worker keeps compact shards: `<data dir>/<use case>/<config id hex>/shard-<n>-<sha256 prefix>.compact`
/// (and `.partial` while it arrives). The content hash in the name means a file is only ever resumed or reused
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

    /// Deletes the files of shard `key` (complete and partial) except those of `keeping`.
    func removeFiles(of key: ShardKey, keeping: [UInt8]? = nil) {
        let folder = self.folder(key)
        let prefix = "shard-\(key.shard)-"
        let kept = keeping.map { URL(fileURLWithPath: path(key, sha256: $0)).lastPathComponent }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
            if let kept, name == kept || name == kept + ".partial" { continue }
            try? FileManager.default.removeItem(atPath: "\(folder)/\(name)")
        }
    }
}
