import PIR

extension ShardRowFile {
    /// Bytes of a placed record before its value.
    static let placedRecordHeader = 15

    /// A version's row file (manifest format 2): the rows in input order as records
    /// `hash:u64 | bucket:u32 | slot:u8 | length:u16 | value`, little-endian, each with where it sits in the
    /// shard's cuckoo table, so that the next update starts from exactly this table.
    public static func encode(_ rows: [ShardRow], placements: [UInt64: CuckooTable.Placement]) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(rows.reduce(0) { $0 + placedRecordHeader + $1.value.count })
        for row in rows {
            guard let place = placements[row.hash], place.bucket <= Int(UInt32.max), place.slot <= Int(UInt8.max) else {
                throw DatasetError.processing("row \(row.hash) has no placement in its shard's table")
            }
            for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: row.hash >> UInt64(8 * i))) }
            for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: place.bucket >> (8 * i))) }
            out.append(UInt8(place.slot))
            out.append(UInt8(truncatingIfNeeded: row.value.count))
            out.append(UInt8(truncatingIfNeeded: row.value.count >> 8))
            out.append(contentsOf: row.value)
        }
        return out
    }

    /// Parses a placed row file, refusing a truncated record; rows come back with line 0.
    public static func decodePlaced(_ bytes: [UInt8], path: String) throws -> (rows: [ShardRow], placements: [CuckooTable.Placement]) {
        var rows: [ShardRow] = []
        var placements: [CuckooTable.Placement] = []
        var at = 0
        while at < bytes.count {
            guard bytes.count - at >= placedRecordHeader else { throw DatasetError.badManifest("\(path): truncated row record at byte \(at)") }
            var hash: UInt64 = 0
            for i in 0..<8 { hash |= UInt64(bytes[at + i]) << UInt64(8 * i) }
            var bucket = 0
            for i in 0..<4 { bucket |= Int(bytes[at + 8 + i]) << (8 * i) }
            let slot = Int(bytes[at + 12])
            let length = Int(bytes[at + 13]) | Int(bytes[at + 14]) << 8
            at += placedRecordHeader
            guard bytes.count - at >= length else { throw DatasetError.badManifest("\(path): truncated row value at byte \(at)") }
            rows.append(ShardRow(hash: hash, line: 0, value: Array(bytes[at..<(at + length)])))
            placements.append(CuckooTable.Placement(bucket: bucket, slot: slot))
            at += length
        }
        return (rows, placements)
    }

    /// The rows of a version's row file, in either format.
    static func decode(_ bytes: [UInt8], path: String, placed: Bool) throws -> [ShardRow] {
        placed ? try decodePlaced(bytes, path: path).rows : try decode(bytes, path: path)
    }
}
