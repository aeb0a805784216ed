import Crypto
#if canImport(Glibc)
import Glibc
#endif

/// A worker's on-disk cache of a shard's database matrices in exactly the layout the scan reads
/// (`DatabaseMatrix`), so a restarted worker maps them instead of rebuilding the evaluation form, and a worker
/// whose shards exceed its memory budget serves them from the page cache.
///
/// Layout (little-endian): `magic "CVSCAN01"`, `version:u32 = 1`, `headerBytes:u32`, `tables:u32`, `slots:u32`,
/// `rows:u32`, `degree:u32`, `columnHeight:u32`, `tag[32]` (the content the cache was derived from, e.g. the
/// compact shard's SHA-256), `sha256[32]` (over everything after the header, padding included); then every
/// table's presence bytes (whole columns), zero padding to a page, and each table's words from a page boundary.
public enum ScanFile {
    static let magic: [UInt8] = Array("CVSCAN01".utf8)
    static let version: UInt32 = 1
    static let headerBytes = 8 + 4 * 7 + 32 + 32

    /// The shape every table of the file has.
    struct Shape: Equatable {
        let tables: Int, slots: Int, rows: Int, degree: Int, columnHeight: Int

        var presenceBytes: Int { (slots + columnHeight - 1) / columnHeight * columnHeight }
        var wordsPerTable: Int { DatabaseMatrix.wordCount(slots: slots, rows: rows, degree: degree, columnHeight: columnHeight) }
        var firstTableOffset: Int { pageAligned(headerBytes + tables * presenceBytes) }
        var tableStride: Int { pageAligned(wordsPerTable * 4) }
        var fileBytes: Int { firstTableOffset + tables * tableStride }
    }

    /// Writes `matrices` (all of one shape) to `path` atomically (a temporary file, fsync, rename).
    static func write(_ matrices: [DatabaseMatrix], tag: [UInt8], to path: String) throws {
        guard let first = matrices.first, tag.count == 32 else { throw PIRError.invalidParameters("scan file: no matrices or a bad tag") }
        let shape = Shape(tables: matrices.count, slots: first.slots, rows: first.rows, degree: first.degree, columnHeight: first.columnHeight)
        var presence: [UInt8] = []
        for m in matrices {
            guard Shape(tables: matrices.count, slots: m.slots, rows: m.rows, degree: m.degree, columnHeight: m.columnHeight) == shape,
                  m.present.count == shape.presenceBytes else {
                throw PIRError.invalidParameters("scan file: matrices of different shapes")
            }
            presence += m.present
        }
        let head = presence + [UInt8](repeating: 0, count: shape.firstTableOffset - headerBytes - presence.count)
        let padding = [UInt8](repeating: 0, count: shape.tableStride - shape.wordsPerTable * 4)
        var digest = SHA256()
        digest.update(data: head)
        for m in matrices {
            digest.update(bufferPointer: UnsafeRawBufferPointer(start: m.words.pointer, count: m.words.count * 4))
            digest.update(data: padding)
        }
        var header = magic
        for v in [version, UInt32(headerBytes), UInt32(shape.tables), UInt32(shape.slots), UInt32(shape.rows), UInt32(shape.degree),
                  UInt32(shape.columnHeight)] {
            for i in 0..<4 { header.append(UInt8(truncatingIfNeeded: v >> UInt32(8 * i))) }
        }
        header += tag
        header += Array(digest.finalize())
        let temporary = "\(path).tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw PIRError.invalidParameters("scan file: cannot create \(temporary): errno \(errno)") }
        var ok = false
        defer {
            close(fd)
            if !ok { unlink(temporary) }
        }
        try (header + head).withUnsafeBytes { try writeAll(fd, $0) }
        for m in matrices {
            try writeAll(fd, UnsafeRawBufferPointer(start: m.words.pointer, count: m.words.count * 4))
            try padding.withUnsafeBytes { try writeAll(fd, $0) }
        }
        guard fsync(fd) == 0, rename(temporary, path) == 0 else {
            throw PIRError.invalidParameters("scan file: cannot commit \(path): errno \(errno)")
        }
        ok = true
    }

    /// Maps the matrices of `path`, refusing a file whose tag, shape, size or SHA-256 does not match. Reading it
    /// once for the checksum also warms the page cache.
    /// The file holds 1 to 64 tables; the caller checks the count against its parameters.
    static func map(path: String, tag: [UInt8], slots: Int, rows: Int, degree: Int, columnHeight: Int) throws -> [DatabaseMatrix] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw PIRError.malformedDatabase("scan file \(path): cannot open: errno \(errno)") }
        defer { close(fd) }  // the mappings outlive the descriptor
        var header = [UInt8](repeating: 0, count: headerBytes)
        guard header.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, headerBytes, 0) }) == headerBytes,
              Array(header[0..<8]) == magic else {
            throw PIRError.malformedDatabase("scan file \(path): not a scan file")
        }
        func u32(_ at: Int) -> Int { Int(header[at]) | Int(header[at + 1]) << 8 | Int(header[at + 2]) << 16 | Int(header[at + 3]) << 24 }
        guard u32(8) == Int(version), u32(12) == headerBytes else { throw PIRError.malformedDatabase("scan file \(path): unsupported version") }
        let tables = u32(16)
        guard (1...64).contains(tables) else { throw PIRError.malformedDatabase("scan file \(path): \(tables) tables") }
        let shape = Shape(tables: tables, slots: slots, rows: rows, degree: degree, columnHeight: max(columnHeight, 1))
        guard Shape(tables: u32(16), slots: u32(20), rows: u32(24), degree: u32(28), columnHeight: u32(32)) == shape else {
            throw PIRError.malformedDatabase("scan file \(path): its shape differs from the shard's parameters")
        }
        guard Array(header[36..<68]) == tag else { throw PIRError.malformedDatabase("scan file \(path): derived from other content") }
        var status = stat()
        guard fstat(fd, &status) == 0, Int(status.st_size) == shape.fileBytes else {
            throw PIRError.malformedDatabase("scan file \(path): \(status.st_size) bytes, expected \(shape.fileBytes)")
        }
        var head = [UInt8](repeating: 0, count: shape.firstTableOffset - headerBytes)
        guard head.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, $0.count, off_t(headerBytes)) }) == head.count else {
            throw PIRError.malformedDatabase("scan file \(path): cannot read the presence bytes")
        }
        var digest = SHA256()
        digest.update(data: head)
        let presence = head.prefix(tables * shape.presenceBytes)
        guard presence.allSatisfy({ $0 <= 1 }) else { throw PIRError.malformedDatabase("scan file \(path): bad presence bytes") }
        var matrices: [DatabaseMatrix] = []
        for t in 0..<tables {
            let words = try MatrixWords(mapping: fd, offset: shape.firstTableOffset + t * shape.tableStride, length: shape.tableStride,
                                        count: shape.wordsPerTable)
            digest.update(bufferPointer: UnsafeRawBufferPointer(start: words.pointer, count: shape.tableStride))
            let own = Array(presence[(t * shape.presenceBytes)..<((t + 1) * shape.presenceBytes)])
            matrices.append(DatabaseMatrix(words: words, present: own, slots: slots, rows: rows, degree: degree, columnHeight: shape.columnHeight))
        }
        guard Array(digest.finalize()) == Array(header[68..<100]) else {
            throw PIRError.malformedDatabase("scan file \(path): checksum mismatch")
        }
        return matrices
    }

    static func pageAligned(_ x: Int) -> Int { (x + 4095) / 4096 * 4096 }

    /// Writes the whole buffer, 64 MiB at a time, each piece flushed and dropped from the page cache before the
    /// next: a worker writing gigabytes of scan files in a memory-limited cgroup would otherwise fill it with
    /// dirty pages and stall every thread of the process (its heartbeats included) in reclaim.
    static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < buffer.count {
            let n = Glibc.write(fd, buffer.baseAddress! + offset, min(buffer.count - offset, 1 << 26))
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw PIRError.invalidParameters("scan file: write failed: errno \(errno)") }
            offset += n
            if n >= 1 << 20 {
                _ = fdatasync(fd)
                _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
            }
        }
    }
}
