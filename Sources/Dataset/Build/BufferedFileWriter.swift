import LookupProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a file through a fixed buffer with plain `write(2)` calls: for outputs of any size produced a few
/// bytes at a time (spill files, streamed CSV).
public final class BufferedFileWriter {
    /// The file's path.
    public let path: String
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let capacity: Int
    private var closed = false

    /// Creates (or truncates) `path`, mode 0600.
    public init(path: String, capacity: Int = 1 << 20) throws {
        self.path = path
        self.capacity = capacity
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw DatasetError.unreadable(path: path, why: "cannot create (errno \(errno))") }
        buffer.reserveCapacity(capacity)
    }

    /// Appends bytes.
    public func write<Bytes: Collection>(_ bytes: Bytes) throws where Bytes.Element == UInt8 {
        buffer.append(contentsOf: bytes)
        if buffer.count >= capacity { try flush() }
    }

    /// Appends a string's UTF-8.
    public func write(_ text: String) throws { try write(text.utf8) }

    func flush() throws {
        var written = 0
        while written < buffer.count {
            let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            guard n > 0 else { throw DatasetError.unreadable(path: path, why: "write failed (errno \(errno))") }
            written += n
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes, syncs and closes.
    public func close() throws {
        try flush()
        guard !closed else { return }
        closed = true
        guard fsync(fd) == 0 else { Glibc.close(fd); throw DatasetError.unreadable(path: path, why: "fsync failed (errno \(errno))") }
        Glibc.close(fd)
    }

    deinit { if !closed { Glibc.close(fd) } }
}
