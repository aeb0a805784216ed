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

    /// Writes the records to `path` atomically.
    func write(to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
