import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The system calls of a durable write, shared by the files this module writes: every byte written (a short write or
/// `EINTR` continues) and then synced, and a directory synced so that a new entry in it survives a power loss. Each
/// returns 0 or the `errno` of the call that failed; the caller turns that into its own error.
enum DurableWrite {
    /// Writes all of `bytes` to `fd` and fsyncs it.
    static func writeAllAndSync(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        var written = 0
        while written < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += n
        }
        return fsync(fd) == 0 ? 0 : errno
    }

    /// Opens `path` read-only and fsyncs it; with `directory`, a path that is not a directory fails (`ENOTDIR`)
    /// instead of syncing a file of that name.
    static func sync(_ path: String, directory: Bool = false) -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0))
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        return fsync(fd) == 0 ? 0 : errno
    }
}
