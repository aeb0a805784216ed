import BFV
import Crypto
import PIR

/// The compact form of a processed shard, for transfer: each plaintext in coefficient form mod t, packed
/// (`log2 t` bits per coefficient), instead of the evaluation form over the ciphertext moduli, which is ~8×
/// larger and does not compress. The receiver rebuilds the evaluation form.
///
/// Layout: `magic "CVCOMPT1" | tables:u32 | slotsPerTable:u32 | plaintextBytes:u32`, then per slot a presence
/// byte and, if present, the packed plaintext.
public enum CompactShard {
    static let magic = Array("CVCOMPT1".utf8)

    /// The compact bytes of a shard.
    public static func serialize(_ database: ProcessedDatabase, context: Context) throws -> [UInt8] {
        try serialize(plaintexts: database.tables.map { table in try table.map { try $0.map { try context.plaintext(fromEval: $0) } } },
                      context: context)
    }

    /// The compact bytes of a shard's coefficient-form plaintexts (per sub-table and slot, nil where absent), as a
    /// shard file of version 2 gives them without any transform.
    public static func serialize(plaintexts: [[Plaintext?]], context: Context) throws -> [UInt8] {
        let slots = plaintexts.first?.count ?? 0
        let plaintextBytes = CoefficientPacking.polyByteCount(context: context.plaintextContext)
        var out = magic
        for v in [UInt32(plaintexts.count), UInt32(slots), UInt32(plaintextBytes)] { appendLE(v, &out) }
        for table in plaintexts {
            guard table.count == slots else { throw ClusterError.badChunk("sub-tables of different slot counts") }
            for slot in table {
                if let slot {
                    guard slot.poly.context == context.plaintextContext else { throw ClusterError.badChunk("a plaintext of other parameters") }
                    out.append(1)
                    out += slot.serialize()
                } else {
                    out.append(0)
                }
            }
        }
        return out
    }

    /// The shard from its compact bytes, checked against `parameters` and rebuilt in evaluation form.
    public static func deserialize(_ bytes: [UInt8], parameters: MulPirParameters, context: Context) throws -> ProcessedDatabase {
        guard bytes.count >= 20, Array(bytes[0..<8]) == magic else { throw ClusterError.badChunk("not a compact shard") }
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        let (tableCount, slots, plaintextBytes) = (u32(8), u32(12), u32(16))
        guard tableCount >= 1, tableCount <= 64, slots >= 1, slots <= 1 << 24,
              plaintextBytes == CoefficientPacking.polyByteCount(context: context.plaintextContext) else {
            throw ClusterError.badChunk("compact shard header does not match the parameters")
        }
        var offset = 20
        var tables: [[EvalPlaintext?]] = []
        for _ in 0..<tableCount {
            var table: [EvalPlaintext?] = []
            table.reserveCapacity(slots)
            for _ in 0..<slots {
                guard offset < bytes.count else { throw ClusterError.badChunk("compact shard truncated") }
                let present = bytes[offset]
                offset += 1
                switch present {
                case 0: table.append(nil)
                case 1:
                    guard offset + plaintextBytes <= bytes.count else { throw ClusterError.badChunk("compact shard truncated") }
                    let plaintext = try Plaintext(deserialize: Array(bytes[offset..<(offset + plaintextBytes)]), context: context)
                    table.append(try context.evalPlaintext(plaintext))
                    offset += plaintextBytes
                default: throw ClusterError.badChunk("bad presence byte \(present)")
                }
            }
            tables.append(table)
        }
        guard offset == bytes.count else { throw ClusterError.badChunk("trailing bytes in compact shard") }
        return try ProcessedDatabase(parameters: parameters, tables: tables, context: context)
    }

    /// SHA-256 of bytes.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    static func appendLE(_ v: UInt32, _ out: inout [UInt8]) {
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> UInt32(8 * i))) }
    }
}
