import LookupProtocol
import Foundation

/// Finds repeated numbers in a stream of any size in bounded memory: each number's hash is appended, with where
/// it came from, to one of 64 temporary files by its top bits; at the end each file is read and sorted alone, so
/// memory holds one sixty-fourth of the hashes (about 2% of 21 bytes per number), never all of them. A repeat
/// keeps its first occurrence (lowest input line); the later ones are returned.
final class DuplicateFinder {
    /// One number as the stream saw it.
    struct Occurrence: Equatable {
        /// `KeywordHash.hash` of the number.
        let hash: UInt64
        /// Input line.
        let line: UInt32
        /// 1-based data line of the number in the block output.
        let blockLine: UInt32
        /// 1-based data line in the identity output, 0 when it has no identity row.
        let identityLine: UInt32
        /// Whether the number is blocked.
        let blocked: Bool
    }

    /// A later occurrence and the line of the first.
    struct Repeat {
        let occurrence: Occurrence
        let firstLine: UInt32
    }

    static let partitions = 64
    static let recordBytes = 21
    private let directory: String
    private let writers: [BufferedFileWriter]

    /// Spill files in a fresh folder `directory` (removed by `finish` or on failure by the caller's cleanup).
    init(directory: String) throws {
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        writers = try (0..<Self.partitions).map { try BufferedFileWriter(path: "\(directory)/\($0)", capacity: 64 << 10) }
    }

    func add(_ o: Occurrence) throws {
        var record = [UInt8]()
        record.reserveCapacity(Self.recordBytes)
        for i in 0..<8 { record.append(UInt8(truncatingIfNeeded: o.hash >> UInt64(8 * i))) }
        for v in [o.line, o.blockLine, o.identityLine] { for i in 0..<4 { record.append(UInt8(truncatingIfNeeded: v >> UInt32(8 * i))) } }
        record.append(o.blocked ? 1 : 0)
        try writers[Int(o.hash >> 58)].write(record)
    }

    /// The later occurrences of every repeated hash, in input-line order; removes the spill files.
    func finish() throws -> [Repeat] {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var repeats: [Repeat] = []
        for (p, writer) in writers.enumerated() {
            try writer.close()
            guard let data = FileManager.default.contents(atPath: "\(directory)/\(p)") else {
                throw DatasetError.unreadable(path: "\(directory)/\(p)", why: "cannot read")
            }
            let bytes = [UInt8](data)
            func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << UInt32(8 * $1) } }
            var all: [Occurrence] = []
            all.reserveCapacity(bytes.count / Self.recordBytes)
            for at in stride(from: 0, to: bytes.count - Self.recordBytes + 1, by: Self.recordBytes) {
                let hash = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << UInt64(8 * $1) }
                all.append(Occurrence(hash: hash, line: u32(at + 8), blockLine: u32(at + 12), identityLine: u32(at + 16),
                                      blocked: bytes[at + 20] != 0))
            }
            all.sort { ($0.hash, $0.line) < ($1.hash, $1.line) }
            var i = 0
            while i < all.count {
                var j = i + 1
                while j < all.count, all[j].hash == all[i].hash {
                    repeats.append(Repeat(occurrence: all[j], firstLine: all[i].line))
                    j += 1
                }
                i = j
            }
        }
        return repeats.sorted { $0.occurrence.line < $1.occurrence.line }
    }
}
