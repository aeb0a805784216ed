import Foundation

/// A file written whole or not at all: the bytes go to a temporary name, are synced, renamed into place, and the
/// folder is synced, so a crash leaves either the previous state or the complete file (and perhaps the temporary).
public enum SyncedFile {
    /// Writes `bytes` to `path`, owner-readable only, through a temporary `<path>.<pid>-<random><suffix>` of its own
    /// (removed on failure), so writers of the same path never share one.
    public static func save(_ bytes: [UInt8], to path: String, temporarySuffix suffix: String) throws {
        let temporary = temporaryPath(for: path, suffix: suffix)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ClusterError.spool("cannot create \(temporary) (errno \(errno))") }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + done, bytes.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                close(descriptor)
                unlink(temporary)
                throw ClusterError.spool("cannot write \(temporary) (errno \(errno))")
            }
            done += n
        }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw ClusterError.spool("cannot sync or rename \(temporary) (errno \(errno))")
        }
        let folder = open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    /// A temporary name for `path` no other writer uses.
    static func temporaryPath(for path: String, suffix: String) -> String {
        "\(ownPrefix(of: path))\(String(UInt64.random(in: 0...UInt64.max), radix: 16))\(suffix)"
    }

    /// Whether `name` is a temporary this process's `save` made for the file named `target` with `suffix`.
    public static func isOwnTemporary(_ name: String, of target: String, suffix: String) -> Bool {
        name.hasPrefix(ownPrefix(of: target)) && name.hasSuffix(suffix)
    }

    /// How this process's temporaries for `path` begin.
    private static func ownPrefix(of path: String) -> String { "\(path).\(getpid())-" }
}
