import BFV
import Crypto

/// CallVeil's processed-shard file: a fixed header, the shard's parameters, a presence map and the 32-bit
/// evaluation-form plaintext matrix, with a SHA-256 over everything after the header.
///
/// Layout (little-endian): `magic "CVSHARD1"`, `version:u32 = 1`, `headerBytes:u32`, `parametersBytes:u32`,
/// `tables:u32`, `slotsPerTable:u32`, `rows:u32`, `degree:u32`, `sha256[32]`, then the parameters blob (opaque
/// bytes the caller supplies, e.g. a serialized `PirParameters`), the presence bytes (one per slot), zero padding
/// to a multiple of 4096 bytes, and the matrix words `(table, slot, row, coefficient)`. The matrix starts on a
/// page boundary so a loader can map it directly.
public enum ShardFile {
    /// File magic.
    public static let magic: [UInt8] = Array("CVSHARD1".utf8)
    /// Current version.
    public static let version: UInt32 = 1
    static let fixedHeader = 8 + 4 * 7 + 32

    /// Serializes a processed database whose moduli fit 30 bits, with `parameterBlob` stored alongside.
    public static func serialize(_ database: ProcessedDatabase, parameterBlob: [UInt8], context: Context) throws -> [UInt8] {
        let ctx = context.ciphertextContext
        guard ctx.moduli.allSatisfy({ $0.bitWidth <= 30 }) else {
            throw PIRError.invalidParameters("the shard file stores 32-bit residues; moduli above 30 bits are not supported")
        }
        let rows = ctx.rowCount
        let n = context.degree
        let slots = database.tables[0].count
        var body: [UInt8] = parameterBlob
        for table in database.tables { for slot in table { body.append(slot == nil ? 0 : 1) } }
        let matrixOffset = pageAligned(fixedHeader + body.count)
        body.append(contentsOf: repeatElement(0, count: matrixOffset - fixedHeader - body.count))
        body.reserveCapacity(body.count + database.tables.count * slots * rows * n * 4)
        for table in database.tables {
            for slot in table {
                if let slot {
                    for v in slot.poly.data { appendLE(UInt32(truncatingIfNeeded: v), to: &body) }
                } else {
                    body.append(contentsOf: repeatElement(0, count: rows * n * 4))
                }
            }
        }
        var out = magic
        for v in [version, UInt32(fixedHeader), UInt32(parameterBlob.count), UInt32(database.tables.count), UInt32(slots),
                  UInt32(rows), UInt32(n)] {
            appendLE(v, to: &out)
        }
        out.append(contentsOf: SHA256.hash(data: body))
        out.append(contentsOf: body)
        return out
    }

    /// The contents of a shard file.
    public struct Contents: Sendable {
        /// The parameters blob stored with the shard.
        public let parameterBlob: [UInt8]
        /// The plaintext tables.
        public let tables: [[EvalPlaintext?]]
    }

    /// Where a shard file's parts are, from its header, checked against `context` and the file's size.
    struct Layout {
        let blobCount: Int
        let tableCount: Int
        let slots: Int
        let presenceStart: Int
        let matrixOffset: Int
        let slotBytes: Int

        init(_ bytes: [UInt8], context: Context) throws {
            guard bytes.count >= ShardFile.fixedHeader, Array(bytes[0..<8]) == ShardFile.magic else {
                throw PIRError.malformedDatabase("not a CallVeil shard file")
            }
            func u32(_ offset: Int) -> Int {
                Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            }
            guard u32(8) == Int(ShardFile.version), u32(12) == ShardFile.fixedHeader else {
                throw PIRError.malformedDatabase("unsupported shard file version")
            }
            let (blobCount, tableCount, slots, rows, n) = (u32(16), u32(20), u32(24), u32(28), u32(32))
            let ctx = context.ciphertextContext
            guard rows == ctx.rowCount, n == context.degree else {
                throw PIRError.malformedDatabase("shard has \(rows) rows of \(n) coefficients; the parameters need \(ctx.rowCount) of \(context.degree)")
            }
            guard tableCount >= 1, tableCount <= 64, slots >= 1, blobCount <= 1 << 20 else {
                throw PIRError.malformedDatabase("implausible shard dimensions")
            }
            self.blobCount = blobCount
            self.tableCount = tableCount
            self.slots = slots
            presenceStart = ShardFile.fixedHeader + blobCount
            matrixOffset = ShardFile.pageAligned(presenceStart + tableCount * slots)
            slotBytes = rows * n * 4
            let (total, overflow) = matrixOffset.addingReportingOverflow(tableCount * slots * slotBytes)
            guard !overflow, bytes.count == total else {
                throw PIRError.malformedDatabase("shard file has \(bytes.count) bytes, expected \(total)")
            }
        }
    }

    /// Parses and verifies a shard file: magic, version, sizes against `context`, and the SHA-256.
    public static func deserialize(_ bytes: [UInt8], context: Context) throws -> Contents {
        let layout = try Layout(bytes, context: context)
        let digest = Array(SHA256.hash(data: bytes[fixedHeader...]))
        guard digest == Array(bytes[(fixedHeader - 32)..<fixedHeader]) else {
            throw PIRError.malformedDatabase("shard file checksum mismatch")
        }
        let (presenceStart, matrixOffset, slotBytes, slots) = (layout.presenceStart, layout.matrixOffset, layout.slotBytes, layout.slots)
        let ctx = context.ciphertextContext
        let rows = ctx.rowCount, n = context.degree
        let tableCount = layout.tableCount
        let blob = Array(bytes[fixedHeader..<presenceStart])
        var tables: [[EvalPlaintext?]] = []
        for t in 0..<tableCount {
            var table: [EvalPlaintext?] = []
            table.reserveCapacity(slots)
            for s in 0..<slots {
                let index = t * slots + s
                guard bytes[presenceStart + index] == 1 else {
                    guard bytes[presenceStart + index] == 0 else { throw PIRError.malformedDatabase("bad presence byte") }
                    table.append(nil)
                    continue
                }
                let start = matrixOffset + index * slotBytes
                var data = [UInt64](repeating: 0, count: rows * n)
                for i in 0..<(rows * n) {
                    let o = start + 4 * i
                    data[i] = UInt64(bytes[o]) | UInt64(bytes[o + 1]) << 8 | UInt64(bytes[o + 2]) << 16 | UInt64(bytes[o + 3]) << 24
                }
                table.append(try EvalPlaintext(poly: try PolyRq(context: ctx, format: .eval, data: data)))
            }
            tables.append(table)
        }
        return Contents(parameterBlob: blob, tables: tables)
    }

    static func pageAligned(_ x: Int) -> Int { (x + 4095) / 4096 * 4096 }

    static func appendLE(_ v: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: v))
        out.append(UInt8(truncatingIfNeeded: v >> 8))
        out.append(UInt8(truncatingIfNeeded: v >> 16))
        out.append(UInt8(truncatingIfNeeded: v >> 24))
    }
}
