import Foundation

/// Length-prefixed binary records, the form of a workload's large files (query bodies, tokens, answers): compact,
/// and read back without a parser for each field.
struct RecordWriter {
    private(set) var bytes: [UInt8] = []

    mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func field(_ value: [UInt8]) {
        u32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func string(_ value: String) { field(Array(value.utf8)) }

    /// An optional field: a presence byte, then the field.
    mutating func optional(_ value: [UInt8]?) {
        bytes.append(value == nil ? 0 : 1)
        if let value { field(value) }
    }

    /// Writes the records to `path` atomically (a temporary file renamed over it), in chunks: a prepared workload's
    /// calls pass 2 GiB, which one `write` does not take whole.
    func write(to path: String) throws {
        let temporary = "\(path).tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw WorkloadError("cannot write \(temporary)") }
        var written = 0
        let complete = bytes.withUnsafeBytes { raw -> Bool in
            while written < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + written, min(raw.count - written, 1 << 30))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                written += n
            }
            return true
        }
        guard close(fd) == 0, complete, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw WorkloadError("cannot write \(path)")
        }
    }
}
