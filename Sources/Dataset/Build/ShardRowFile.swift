import LookupProtocol
import Foundation

/// One keyword row on its way to a shard: the keyword's hash, the input line it came from, and its value.
public struct ShardRow: Sendable, Equatable {
    /// `KeywordHash.hash(keyword)`, all the processed shard keeps of the keyword.
    public var hash: UInt64
    /// 1-based input line (0 in a version's row file, where lines of past inputs mean nothing).
    public var line: UInt32
    /// The value.
    public var value: [UInt8]

    /// A row.
    public init(hash: UInt64, line: UInt32, value: [UInt8]) {
        self.hash = hash
        self.line = line
        self.value = value
    }
}

/// A shard's rows on disk, in input order: records `hash:u64 | line:u32 | length:u16 | value`, little-endian.
/// The same layout serves as the temporary spill file of a build and, with lines zeroed, as the `<stem>-<i>.rows`
/// file of a format-1 version (still read by an update from such a version).
public enum ShardRowFile {
    /// Bytes of a record before its value.
    static let recordHeader = 14

    /// Appends one record.
    public static func append(_ row: ShardRow, to out: inout [UInt8]) {
        for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: row.hash >> UInt64(8 * i))) }
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: row.line >> UInt32(8 * i))) }
        out.append(UInt8(truncatingIfNeeded: row.value.count))
        out.append(UInt8(truncatingIfNeeded: row.value.count >> 8))
        out.append(contentsOf: row.value)
    }

    /// The records of `rows`, with their lines or with lines zeroed.
    public static func encode(_ rows: [ShardRow], keepingLines: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(rows.reduce(0) { $0 + recordHeader + $1.value.count })
        for row in rows {
            var row = row
            if !keepingLines { row.line = 0 }
            append(row, to: &out)
        }
        return out
    }

    /// Parses records, refusing a truncated one.
    public static func decode(_ bytes: [UInt8], path: String) throws -> [ShardRow] {
        var rows: [ShardRow] = []
        var at = 0
        while at < bytes.count {
            guard bytes.count - at >= recordHeader else { throw DatasetError.badManifest("\(path): truncated row record at byte \(at)") }
            var hash: UInt64 = 0
            for i in 0..<8 { hash |= UInt64(bytes[at + i]) << UInt64(8 * i) }
            var line: UInt32 = 0
            for i in 0..<4 { line |= UInt32(bytes[at + 8 + i]) << UInt32(8 * i) }
            let length = Int(bytes[at + 12]) | Int(bytes[at + 13]) << 8
            at += recordHeader
            guard bytes.count - at >= length else { throw DatasetError.badManifest("\(path): truncated row value at byte \(at)") }
            rows.append(ShardRow(hash: hash, line: line, value: Array(bytes[at..<(at + length)])))
            at += length
        }
        return rows
    }

    /// The rows of the file at `path`.
    public static func read(path: String) throws -> [ShardRow] {
        guard let data = FileManager.default.contents(atPath: path) else { throw DatasetError.unreadable(path: path, why: "cannot read") }
        return try decode([UInt8](data), path: path)
    }
}

/// Appends records to a file through a small buffer: one per shard while the input is read, so memory stays
/// at `shards × buffer` however large the input.
final class SpillWriter {
    private let file: BufferedFileWriter
    private var record: [UInt8] = []
    /// Rows written.
    private(set) var rows = 0
    /// Largest value written.
    private(set) var maxValueLength = 0

    var path: String { file.path }

    init(path: String) throws { file = try BufferedFileWriter(path: path, capacity: 64 << 10) }

    func append(_ row: ShardRow) throws {
        record.removeAll(keepingCapacity: true)
        ShardRowFile.append(row, to: &record)
        try file.write(record)
        rows += 1
        maxValueLength = max(maxValueLength, row.value.count)
    }

    func close() throws { try file.close() }
}
