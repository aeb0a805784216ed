import Foundation

/// Reads what `RecordWriter` wrote; a short or malformed file is an error naming it.
struct RecordReader {
    let path: String
    private let bytes: [UInt8]
    private var offset = 0

    /// Reads the whole file in chunks: a prepared workload's calls pass 2 GiB, and one `read` (which
    /// `FileManager.contents(atPath:)` makes on Linux) returns at most 2 GiB less a page.
    init(path: String) throws {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw WorkloadError("cannot read \(path)") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw WorkloadError("cannot read \(path)") }
        let size = Int(status.st_size)
        var failed = false
        bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = 0
            while count < size {
                let n = read(fd, buffer.baseAddress! + count, min(size - count, 1 << 30))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { failed = n < 0; break }
                count += n
            }
        }
        guard !failed else { throw WorkloadError("cannot read \(path)") }
    }

    var atEnd: Bool { offset == bytes.count }

    private mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, bytes.count - offset >= count else { throw WorkloadError("\(path) is truncated at byte \(offset)") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func u32() throws -> UInt32 {
        try take(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u64() throws -> UInt64 {
        try take(8).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func field() throws -> [UInt8] { Array(try take(Int(try u32()))) }

    mutating func string() throws -> String { String(decoding: try field(), as: UTF8.self) }

    mutating func optional() throws -> [UInt8]? {
        switch try take(1).first {
        case 0: return nil
        case 1: return try field()
        default: throw WorkloadError("\(path): bad presence byte at \(offset - 1)")
        }
    }
}
