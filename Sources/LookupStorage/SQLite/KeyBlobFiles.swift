import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The evaluation keys' bytes as files beside a SQLite key store, one file per stored key. A key miss reads its file
/// with one `O_DIRECT` read into an aligned buffer: at population scale nearly every key read is a cold read, and
/// SQLite's page-by-page reads through the page cache cost about ten times the CPU of a direct read (and fill the page
/// cache with keys that are read once). Where the file system refuses direct I/O the read goes through the page cache.
///
/// Names are random and never reused; which names are in use is the SQLite store's business (`key_blob_garbage` lists
/// the ones to delete), so a file here is either referenced by a row or listed for deletion.
final class KeyBlobFiles: Sendable {
    /// The directory holding the files, in 256 subdirectories by the name's first two hex digits.
    let directory: String
    /// Whether reads try `O_DIRECT` first (false in tests that check the buffered path).
    let direct: Bool
    /// Aligned read buffers kept for reuse (direct I/O writes into pinned pages; fresh ones fault on every read).
    private let spare = Mutex<[(address: UInt, capacity: Int)]>([])
    private static let maxSpare = 2
    /// Direct I/O's alignment of buffer, offset and length; 4 KiB covers every common logical block size.
    static let alignment = 4096

    #if os(Linux) && arch(x86_64)
    static let oDirect: Int32 = 0o40000
    #elseif os(Linux) && arch(arm64)
    static let oDirect: Int32 = 0o200000
    #else
    static let oDirect: Int32 = 0
    #endif

    /// The files under `directory`, created (owner-only) if missing.
    init(directory: String, direct: Bool = true) throws {
        self.directory = directory
        self.direct = direct && Self.oDirect != 0
        try Self.makeDirectory(directory)
    }

    deinit {
        for buffer in spare.withLock({ $0 }) { free(UnsafeMutableRawPointer(bitPattern: buffer.address)) }
    }

    /// A new, unused name for a key's file.
    static func newName() -> String {
        UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// Whether `name` is one `newName()` makes: 32 lowercase hex digits. A name read from the database is checked
    /// before it becomes a path, so a damaged row cannot point a read or a delete outside the directory.
    static func isValid(_ name: String) -> Bool {
        name.utf8.count == 32 && name.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    func path(_ name: String) -> String { "\(directory)/\(name.prefix(2))/\(name)" }

    /// Writes `bytes` as the file `name` (which must not exist), durably: the file and its directory entry are on disk
    /// when this returns. A failure removes what was written.
    func write(_ bytes: [UInt8], name: String) throws {
        guard Self.isValid(name) else { throw StoreError(.corrupt, "Invalid key file name") }
        let subdirectory = "\(directory)/\(name.prefix(2))"
        try Self.makeDirectory(subdirectory)
        let file = path(name)
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.ioError("create a key file", errno) }
        let result = bytes.withUnsafeBytes { DurableWrite.writeAllAndSync(fd, $0) }
        close(fd)
        if result != 0 {
            unlink(file)
            throw Self.ioError("write a key file", result)
        }
        try Self.syncDirectory(subdirectory)
    }

    /// The `size` bytes of the file `name`; nil if it does not exist (a concurrent write replaced its key).
    func read(_ name: String, size: Int) throws -> [UInt8]? {
        guard size >= 0, size <= Int(Int32.max) else { throw StoreError(.corrupt, "Key file size \(size) out of range") }
        guard Self.isValid(name) else { throw StoreError(.corrupt, "A stored key's file name is invalid") }
        let file = path(name)
        var fd: Int32 = -1
        var isDirect = false
        if direct {
            fd = open(file, O_RDONLY | O_CLOEXEC | Self.oDirect)
            isDirect = fd >= 0
            if fd < 0 && errno == ENOENT { return nil }
        }
        if fd < 0 {
            fd = open(file, O_RDONLY | O_CLOEXEC)
            if fd < 0 {
                if errno == ENOENT { return nil }
                throw Self.ioError("open a key file", errno)
            }
        }
        defer { close(fd) }
        let capacity = max(Self.alignment, (size + Self.alignment) / Self.alignment * Self.alignment)
        let (buffer, allocated) = try takeBuffer(capacity)
        defer { giveBack(buffer, allocated) }
        var total = 0
        // One read reaches the end of the file; `capacity` exceeds `size` so that a longer file is noticed.
        while total < capacity {
            let n = pread(fd, buffer + total, capacity - total, off_t(total))
            if n < 0 {
                let error = errno
                if error == EINTR { continue }
                if isDirect && error == EINVAL {  // a file system that opens with O_DIRECT but refuses the read
                    isDirect = false
                    _ = fcntl(fd, F_SETFL, 0)
                    total = 0
                    continue
                }
                throw Self.ioError("read a key file", error)
            }
            if n == 0 { break }
            total += n
            if isDirect && total % Self.alignment != 0 { break }  // short of a block: the end of the file
        }
        guard total == size else {
            throw StoreError(.corrupt, "A key file holds \(total) bytes, its row says \(size)")
        }
        return [UInt8](UnsafeRawBufferPointer(start: buffer, count: size))
    }

    /// Deletes the files and returns the names no longer naming one here: deleted, already gone (or never created: its
    /// subdirectory is missing), or invalid (naming no file here). A file that cannot be deleted is left out.
    func remove(_ names: [String]) -> [String] {
        names.filter { name in
            !Self.isValid(name) || unlink(path(name)) == 0 || errno == ENOENT || errno == ENOTDIR
        }
    }

    /// A kept buffer of at least `capacity` bytes (the smallest that fits), or a new one; with its allocated size.
    private func takeBuffer(_ capacity: Int) throws -> (UnsafeMutableRawPointer, Int) {
        let reused = spare.withLock { spare -> (address: UInt, capacity: Int)? in
            let fitting = spare.indices.filter { spare[$0].capacity >= capacity }
            guard let index = fitting.min(by: { spare[$0].capacity < spare[$1].capacity }) else { return nil }
            return spare.remove(at: index)
        }
        if let reused, let buffer = UnsafeMutableRawPointer(bitPattern: reused.address) { return (buffer, reused.capacity) }
        var pointer: UnsafeMutableRawPointer?
        guard posix_memalign(&pointer, Self.alignment, capacity) == 0, let pointer else {
            throw StoreError(.io, "Out of memory for a key read of \(capacity) bytes")
        }
        return (pointer, capacity)
    }

    private func giveBack(_ buffer: UnsafeMutableRawPointer, _ capacity: Int) {
        let kept = spare.withLock { spare -> Bool in
            guard spare.count < Self.maxSpare else { return false }
            spare.append((UInt(bitPattern: buffer), capacity))
            return true
        }
        if !kept { free(buffer) }
    }

    private static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw ioError("create the key file directory", errno)
        }
    }

    private static func syncDirectory(_ path: String) throws {
        let code = DurableWrite.sync(path, directory: true)
        guard code == 0 else { throw ioError("sync the key file directory", code) }
    }

    private static func ioError(_ what: String, _ code: Int32) -> StoreError {
        StoreError(.io, "Could not \(what): \(String(cString: strerror(code)))")
    }
}
