import Foundation

/// Reads what `RecordWriter` wrote; a short or malformed file is an error naming it.
struct RecordReader {
    let path: String
    private let bytes: [UInt8]
    private var offset = 0

    init(path: String) throws {
        self.path = path
        guard let data = FileManager.default.contents(atPath: path) else { throw WorkloadError("cannot read \(path)") }
        bytes = [UInt8](data)
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
