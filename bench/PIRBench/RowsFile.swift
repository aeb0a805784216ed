import Foundation
import PIR

/// A benchmark shard's rows in a file another implementation can read, so both answer the same shard:
/// the magic `CVROWS1\n`, a little-endian UInt32 row count, then per row a UInt16 keyword length, the keyword,
/// a UInt16 value length and the value.
enum RowsFile {
    static let magic = Array("CVROWS1\n".utf8)

    enum Failure: Error, CustomStringConvertible {
        case malformed(String)
        var description: String {
            switch self { case .malformed(let why): "not a rows file: \(why)" }
        }
    }

    /// `count` distinct random E.164 numbers ("+1" and ten digits) with `valueBytes` random bytes each.
    static func generate(count: Int, valueBytes: Int, seed: UInt64) -> [(keyword: [UInt8], value: [UInt8])] {
        var rng = SplitMix64(seed: seed)
        var rows: [(keyword: [UInt8], value: [UInt8])] = []
        rows.reserveCapacity(count)
        var seen = Set<UInt64>()
        while rows.count < count {
            let number = UInt64.random(in: 2_000_000_000...9_999_999_999, using: &rng)
            guard seen.insert(number).inserted else { continue }
            rows.append((Array(("+1" + String(number)).utf8), (0..<valueBytes).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        }
        return rows
    }

    static func write(_ rows: [(keyword: [UInt8], value: [UInt8])], path: String) throws {
        var out = magic
        out.reserveCapacity(16 + rows.count * 32)
        func put<T: FixedWidthInteger>(_ x: T) { withUnsafeBytes(of: x.littleEndian) { out.append(contentsOf: $0) } }
        put(UInt32(rows.count))
        for row in rows {
            put(UInt16(row.keyword.count)); out.append(contentsOf: row.keyword)
            put(UInt16(row.value.count)); out.append(contentsOf: row.value)
        }
        try Data(out).write(to: URL(fileURLWithPath: path))
    }

    static func read(path: String) throws -> [(keyword: [UInt8], value: [UInt8])] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard bytes.count >= 12, Array(bytes[0..<8]) == magic else { throw Failure.malformed("bad magic") }
        var at = 8
        func take(_ n: Int) throws -> ArraySlice<UInt8> {
            guard n <= bytes.count - at else { throw Failure.malformed("truncated at byte \(at)") }
            defer { at += n }
            return bytes[at..<(at + n)]
        }
        func int(_ width: Int) throws -> Int {
            try take(width).reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        let count = try int(4)
        var rows: [(keyword: [UInt8], value: [UInt8])] = []
        rows.reserveCapacity(min(count, bytes.count / 4))
        for _ in 0..<count {
            let keyword = Array(try take(try int(2)))
            let value = Array(try take(try int(2)))
            rows.append((keyword, value))
        }
        guard at == bytes.count else { throw Failure.malformed("\(bytes.count - at) trailing bytes") }
        return rows
    }
}
