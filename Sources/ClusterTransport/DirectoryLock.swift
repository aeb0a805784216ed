import Foundation

/// An exclusive hold on a directory for as long as this process keeps it (an `flock` on `<directory>/.lock`), so
/// two processes never write and prune the same spool; the kernel drops the hold when the process dies.
public final class DirectoryLock: Sendable {
    /// The directory held.
    public let directory: String
    private let descriptor: Int32

    /// Creates `directory` if needed and takes the hold, or throws `ClusterError.spool` naming the directory when
    /// another process (or another holder in this one) has it.
    public init(directory: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ClusterError.spool("cannot create \(directory): \(error)")
        }
        let descriptor = open("\(directory)/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ClusterError.spool("cannot open \(directory)/.lock (errno \(errno))") }
        var result: Int32
        repeat { result = flock(descriptor, LOCK_EX | LOCK_NB) } while result != 0 && errno == EINTR
        guard result == 0 else {
            let reason = errno
            close(descriptor)
            if reason == EWOULDBLOCK {
                throw ClusterError.spool("\(directory) is in use by another running coordinator; give each its own name or state directory")
            }
            throw ClusterError.spool("cannot lock \(directory) (errno \(reason))")
        }
        self.directory = directory
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }
}
