import LookupProtocol
import Crypto
#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Size and SHA-256 of a file, read in bounded chunks.
public struct FileDigest: Sendable, Equatable {
    /// Size in bytes.
    public let bytes: Int
    /// SHA-256, lower-case hex.
    public let sha256: String

    /// The digest of the file at `path`.
    public static func of(path: String) throws -> FileDigest {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw DatasetError.unreadable(path: path, why: "cannot open") }
        defer { try? handle.close() }
        var hasher = SHA256()
        var total = 0
        try forEachChunk(of: handle, path: path) { chunk in
            hasher.update(data: chunk)
            total += chunk.count
        }
        return FileDigest(bytes: total, sha256: hasher.finalize().hexString)
    }

    /// Reads an open file to its end, 1 MiB at a time.
    static func forEachChunk(of handle: FileHandle, path: String, _ body: (Data) throws -> Void) throws {
        while true {
            let chunk: Data
            do { chunk = try handle.read(upToCount: 1 << 20) ?? Data() } catch {
                throw DatasetError.unreadable(path: path, why: "\(error)")
            }
            if chunk.isEmpty { return }
            try body(chunk)
        }
    }

    /// The digest of bytes in memory.
    public static func of(bytes: [UInt8]) -> FileDigest {
        FileDigest(bytes: bytes.count, sha256: SHA256.hash(data: bytes).hexString)
    }
}

/// Whole-file writes that never leave a partial file under the final name.
public enum AtomicFile {
    /// Writes `data` to a temporary file beside `path`, syncs it, and renames it over `path` (`beforeRename` is
    /// called between, for tests that stop a commit there).
    public static func write(_ data: Data, to path: String, beforeRename: () throws -> Void = {}) throws {
        let temporary = "\(path).tmp-\(getpid())"
        do {
            try data.write(to: URL(fileURLWithPath: temporary))
            try sync(path: temporary)
            try beforeRename()
            guard rename(temporary, path) == 0 else { throw DatasetError.unreadable(path: path, why: "rename failed (errno \(errno))") }
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// fsyncs a file (or directory) so a rename after it publishes complete contents.
    public static func sync(path: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw DatasetError.unreadable(path: path, why: "cannot open to sync (errno \(errno))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw DatasetError.unreadable(path: path, why: "fsync failed (errno \(errno))") }
    }
}
