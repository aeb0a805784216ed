import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A directory of secret key files (mode 0600, in a 0700 directory) listed by a JSON manifest, `keys.json`,
/// replaced atomically; files the manifest no longer lists are deleted. The issuer-key and gateway-key rings keep
/// their keys in one each when there is no shared store.
struct KeyDirectory: Sendable {
    /// The directory.
    let path: String
    /// The suffix of its key files (others are never touched).
    let suffix: String

    /// Opens (creating) the directory.
    init(path: String, suffix: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        self.path = path
        self.suffix = suffix
    }

    /// The manifest's records; nil when there is none yet.
    func records<Record: Decodable>(_ type: Record.Type) throws -> [Record]? {
        let manifest = "\(path)/keys.json"
        guard FileManager.default.fileExists(atPath: manifest) else { return nil }
        do { return try JSONDecoder().decode([Record].self, from: Data(contentsOf: URL(fileURLWithPath: manifest))) } catch {
            throw ConfigError("\(manifest) does not parse: \(error)")
        }
    }

    /// The bytes of a key file.
    func read(_ file: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: "\(path)/\(file)"))
    }

    /// Writes a key file with mode 0600 unless it exists (a key file never changes once written).
    func writeOnce(_ file: String, _ contents: Data) throws {
        let target = "\(path)/\(file)"
        guard !FileManager.default.fileExists(atPath: target) else { return }
        guard FileManager.default.createFile(atPath: target, contents: contents, attributes: [.posixPermissions: 0o600]) else {
            throw ConfigError("cannot write key file \(target)")
        }
    }

    /// Replaces the manifest with `records` and deletes the key files not in `files`.
    func replaceManifest<Record: Encodable>(_ records: [Record], files: Set<String>) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let temporary = "\(path)/keys.json.tmp"
        try encoder.encode(records).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, "\(path)/keys.json") == 0 else { throw ConfigError("cannot replace \(path)/keys.json") }
        for file in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where file.hasSuffix(suffix) && !files.contains(file) {
            try? FileManager.default.removeItem(atPath: "\(path)/\(file)")
        }
    }
}
