import Foundation
import LookupEngine
#if canImport(Glibc)
import Glibc
#endif

/// A directory of secret key files (mode 0600, in a 0700 directory) listed by a JSON manifest, `keys.json`,
/// replaced atomically; files the manifest no longer lists are deleted. The issuer-key and gateway-key rings keep
/// their keys in one each when there is no shared store.
package struct KeyDirectory: Sendable {
    /// The directory.
    package let path: String
    /// The suffix of its key files (others are never touched).
    package let suffix: String

    /// Opens (creating) the directory.
    package init(path: String, suffix: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        self.path = path
        self.suffix = suffix
    }

    /// The manifest's records; nil when there is none yet.
    package func records<Record: Decodable>(_ type: Record.Type) throws -> [Record]? {
        let manifest = "\(path)/keys.json"
        guard FileManager.default.fileExists(atPath: manifest) else { return nil }
        do { return try JSONDecoder().decode([Record].self, from: Data(contentsOf: URL(fileURLWithPath: manifest))) } catch {
            throw ConfigError("\(manifest) does not parse: \(error)")
        }
    }

    /// The bytes of a key file.
    package func read(_ file: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: "\(path)/\(file)"))
    }

    /// Writes a key file with mode 0600 unless it already holds `contents` (a key the manifest lists is never
    /// rewritten). A file of that name with other bytes is a key a failed save wrote and no manifest lists: it is
    /// replaced, so that the manifest written next names the key the ring holds. The file is written under a
    /// temporary name, synced, renamed into place and the directory synced, so that `keys.json`, replaced after it,
    /// never names a file a power loss left empty.
    package func writeKey(_ file: String, _ contents: Data) throws {
        let target = "\(path)/\(file)"
        if FileManager.default.fileExists(atPath: target), (try? Data(contentsOf: URL(fileURLWithPath: target))) == contents { return }
        try Self.writeDurably(contents, to: target, mode: 0o600)
        try Self.sync(path)
    }

    /// Replaces the manifest with `records` (synced, then renamed over `keys.json`, then the directory synced) and
    /// deletes the key files not in `files`.
    package func replaceManifest<Record: Encodable>(_ records: [Record], files: Set<String>) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try Self.writeDurably(try encoder.encode(records), to: "\(path)/keys.json", mode: 0o600)
        try Self.sync(path)
        for file in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where file.hasSuffix(suffix) && !files.contains(file) {
            try? FileManager.default.removeItem(atPath: "\(path)/\(file)")
        }
    }

    /// Writes `contents` to a fresh temporary file of mode `mode` beside `target`, syncs it and renames it over
    /// `target`: the name only ever holds complete, durable contents.
    package static func writeDurably(_ contents: Data, to target: String, mode: mode_t) throws {
        let temporary = "\(target).tmp-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw ConfigError("cannot create \(temporary) (errno \(errno))") }
        let code = contents.withUnsafeBytes { DurableWrite.writeAllAndSync(fd, $0) }
        var failure = code == 0 ? nil : "write or fsync failed (errno \(code))"
        close(fd)
        if failure == nil, rename(temporary, target) != 0 { failure = "rename failed (errno \(errno))" }
        if let failure {
            unlink(temporary)
            throw ConfigError("cannot write \(target): \(failure)")
        }
    }

    /// fsyncs a directory (or file), so a rename in it survives a power loss.
    package static func sync(_ path: String) throws {
        let code = DurableWrite.sync(path)
        guard code == 0 else { throw ConfigError("cannot sync \(path) (errno \(code))") }
    }
}
