import BFV
import Crypto

/// CallVeil's processed-shard file: a fixed header, the shard's parameters, a presence map and the plaintexts,
/// with a SHA-256 over everything after the header.
///
/// Version 2 (written now) stores each plaintext's payload, the `bytesPerPlaintext` bytes its coefficients pack
/// (`slotBytes` per slot, fixed, so a slot is found by arithmetic): 1/24 of the evaluation form with the
/// default parameters (4-bit payload coefficients against three 32-bit residues), and
/// the buckets are readable in place, which is what an incremental update reads and patches. The loader packs
/// payloads into coefficients and transforms them. Layout (little-endian): `magic "CVSHARD1"`, `version:u32 = 2`,
/// `headerBytes:u32 = 72`, `parametersBytes:u32`, `tables:u32`, `slotsPerTable:u32`, `slotBytes:u32`,
/// `bitsPerCoefficient:u32`, `degree:u32`, `sha256[32]`, the parameters blob, one presence byte per slot, zero
/// padding to a multiple of 4096 bytes, and the payloads `(table, slot)`.
///
/// Version 1 (still read) has `rows:u32` in place of `slotBytes` and `bitsPerCoefficient`, a 68-byte header, and
/// the 32-bit evaluation-form words `(table, slot, row, coefficient)` as payloads.
public enum ShardFile {
    /// File magic.
    public static let magic: [UInt8] = Array("CVSHARD1".utf8)
    /// Current version.
    public static let version: UInt32 = 2
    static let fixedHeader = 8 + 4 * 7 + 32
    static let fixedHeaderV2 = 8 + 4 * 8 + 32

    /// Serializes a shard's payloads (per sub-table, per slot; nil for an all-zero plaintext) as version 2, with
    /// `parameterBlob` stored alongside.
    public static func serialize(payloads: [[[UInt8]?]], parameters: MulPirParameters, parameterBlob: [UInt8]) throws -> [UInt8] {
        let slotBytes = parameters.bytesPerPlaintext
        let slots = payloads.first?.count ?? 0
        guard !payloads.isEmpty, payloads.allSatisfy({ $0.count == slots }) else {
            throw PIRError.invalidDatabase("sub-tables of different slot counts")
        }
        return try assemble(header: [version, UInt32(fixedHeaderV2), UInt32(parameterBlob.count), UInt32(payloads.count), UInt32(slots),
                                     UInt32(slotBytes), UInt32(parameters.bitsPerCoefficient), UInt32(parameters.encryption.polyDegree)],
                            parameterBlob: parameterBlob, presence: payloads.flatMap { $0.map { $0 == nil ? 0 : 1 } },
                            slotBytes: payloads.count * slots * slotBytes) { body in
            for slot in payloads.joined() {
                guard let slot else {
                    body.append(contentsOf: repeatElement(0, count: slotBytes))
                    continue
                }
                guard slot.count <= slotBytes else { throw PIRError.invalidDatabase("a payload of \(slot.count) bytes for slots of \(slotBytes)") }
                body.append(contentsOf: slot)
                body.append(contentsOf: repeatElement(0, count: slotBytes - slot.count))
            }
        }
    }

    /// A shard file: the header fields, their SHA-256 over the body, then the body (the parameters blob, the
    /// presence bytes, zero padding to a page, and what `slots` appends: `slotBytes` bytes in all).
    static func assemble(header: [UInt32], parameterBlob: [UInt8], presence: [UInt8], slotBytes: Int,
                         slots: (inout [UInt8]) throws -> Void) rethrows -> [UInt8] {
        let headerBytes = magic.count + 4 * header.count + 32
        var body: [UInt8] = parameterBlob + presence
        body.append(contentsOf: repeatElement(0, count: pageAligned(headerBytes + body.count) - headerBytes - body.count))
        body.reserveCapacity(body.count + slotBytes)
        try slots(&body)
        var out = magic
        for v in header { appendLE(v, to: &out) }
        out.append(contentsOf: SHA256.hash(data: body))
        out.append(contentsOf: body)
        return out
    }

    /// Serializes a processed database whose moduli fit 30 bits as version 1 (evaluation form), the format earlier
    /// versions wrote; kept so that reading it stays tested.
    public static func serializeVersion1(_ database: ProcessedDatabase, parameterBlob: [UInt8], context: Context) throws -> [UInt8] {
        let ctx = context.ciphertextContext
        guard ctx.moduli.allSatisfy({ $0.bitWidth <= 30 }) else {
            throw PIRError.invalidParameters("the shard file stores 32-bit residues; moduli above 30 bits are not supported")
        }
        let rows = ctx.rowCount
        let n = context.degree
        let slots = database.tables[0].count
        return assemble(header: [1, UInt32(fixedHeader), UInt32(parameterBlob.count), UInt32(database.tables.count), UInt32(slots),
                                 UInt32(rows), UInt32(n)],
                        parameterBlob: parameterBlob, presence: database.tables.flatMap { $0.map { $0 == nil ? 0 : 1 } },
                        slotBytes: database.tables.count * slots * rows * n * 4) { body in
            for slot in database.tables.joined() {
                if let slot {
                    for v in slot.poly.data { appendLE(UInt32(truncatingIfNeeded: v), to: &body) }
                } else {
                    body.append(contentsOf: repeatElement(0, count: rows * n * 4))
                }
            }
        }
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
        let version: Int
        let headerBytes: Int
        let blobCount: Int
        let tableCount: Int
        let slots: Int
        let presenceStart: Int
        let payloadOffset: Int
        let slotBytes: Int
        /// Version 2: bits per coefficient of the payloads.
        let bitsPerCoefficient: Int

        init(_ bytes: [UInt8], context: Context) throws {
            guard bytes.count >= ShardFile.fixedHeader, Array(bytes[0..<8]) == ShardFile.magic else {
                throw PIRError.malformedDatabase("not a CallVeil shard file")
            }
            func u32(_ offset: Int) -> Int {
                Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            }
            version = u32(8)
            headerBytes = u32(12)
            guard (version == 1 && headerBytes == ShardFile.fixedHeader) || (version == 2 && headerBytes == ShardFile.fixedHeaderV2),
                  bytes.count >= headerBytes else {
                throw PIRError.malformedDatabase("unsupported shard file version")
            }
            let (blobCount, tableCount, slots) = (u32(16), u32(20), u32(24))
            let ctx = context.ciphertextContext
            let n = u32(headerBytes - 36)
            guard n == context.degree else {
                throw PIRError.malformedDatabase("shard has plaintexts of \(n) coefficients; the parameters need \(context.degree)")
            }
            if version == 1 {
                let rows = u32(28)
                guard rows == ctx.rowCount else {
                    throw PIRError.malformedDatabase("shard has \(rows) rows of \(n) coefficients; the parameters need \(ctx.rowCount) of \(context.degree)")
                }
                slotBytes = rows * n * 4
                bitsPerCoefficient = 0
            } else {
                slotBytes = u32(28)
                bitsPerCoefficient = u32(32)
                guard (1...(63 - context.plaintextModulus.value.leadingZeroBitCount)).contains(bitsPerCoefficient),
                      slotBytes >= 1, slotBytes * 8 <= n * bitsPerCoefficient else {
                    throw PIRError.malformedDatabase("payloads of \(slotBytes) bytes at \(bitsPerCoefficient) bits do not fit the parameters")
                }
            }
            guard tableCount >= 1, tableCount <= 64, slots >= 1, slots <= 1 << 24, blobCount <= 1 << 20 else {
                throw PIRError.malformedDatabase("implausible shard dimensions")
            }
            self.blobCount = blobCount
            self.tableCount = tableCount
            self.slots = slots
            presenceStart = headerBytes + blobCount
            payloadOffset = ShardFile.pageAligned(presenceStart + tableCount * slots)
            let (total, overflow) = payloadOffset.addingReportingOverflow(tableCount * slots * slotBytes)
            guard !overflow, bytes.count == total else {
                throw PIRError.malformedDatabase("shard file has \(bytes.count) bytes, expected \(total)")
            }
        }

        /// The stored SHA-256's range.
        var digestRange: Range<Int> { (headerBytes - 32)..<headerBytes }

        /// Throws unless the stored SHA-256 matches the contents.
        func checkDigest(of bytes: [UInt8]) throws {
            guard Array(SHA256.hash(data: bytes[headerBytes...])) == Array(bytes[digestRange]) else {
                throw PIRError.malformedDatabase("shard file checksum mismatch")
            }
        }

        /// Slot `index`'s stored bytes (over all sub-tables), nil when absent.
        func payload(_ index: Int, in bytes: [UInt8]) throws -> ArraySlice<UInt8>? {
            guard try present(index, in: bytes) else { return nil }
            let start = payloadOffset + index * slotBytes
            return bytes[start..<(start + slotBytes)]
        }

        /// Version 2: slot `index`'s plaintext in coefficient form, nil when absent.
        func plaintext(_ index: Int, in bytes: [UInt8], context: Context) throws -> Plaintext? {
            try payload(index, in: bytes).map {
                try context.encodeCoefficients(DatabaseEncoding.values(of: $0, bitsPerCoefficient: bitsPerCoefficient, degree: context.degree))
            }
        }

        /// Slot `index`'s plaintext in evaluation form over the ciphertext moduli, nil when absent: a version-1
        /// payload holds its 32-bit words, a version-2 one is packed into coefficients and transformed.
        func evalPlaintext(_ index: Int, in bytes: [UInt8], context: Context) throws -> EvalPlaintext? {
            if version == 2 { return try plaintext(index, in: bytes, context: context).map { try context.evalPlaintext($0) } }
            guard let slot = try payload(index, in: bytes) else { return nil }
            let ctx = context.ciphertextContext
            let start = slot.startIndex
            var data = [UInt64](repeating: 0, count: ctx.rowCount * context.degree)
            for i in data.indices {
                let o = start + 4 * i
                data[i] = UInt64(bytes[o]) | UInt64(bytes[o + 1]) << 8 | UInt64(bytes[o + 2]) << 16 | UInt64(bytes[o + 3]) << 24
            }
            return try EvalPlaintext(poly: try PolyRq(context: ctx, format: .eval, data: data))
        }

        /// Whether slot `index` (over all sub-tables) is present; throws on a bad presence byte.
        func present(_ index: Int, in bytes: [UInt8]) throws -> Bool {
            switch bytes[presenceStart + index] {
            case 0: return false
            case 1: return true
            default: throw PIRError.malformedDatabase("bad presence byte")
            }
        }
    }

    /// Parses and verifies a shard file (either version): magic, version, sizes against `context`, and the SHA-256;
    /// version 2 payloads are packed into coefficients and transformed to evaluation form.
    public static func deserialize(_ bytes: [UInt8], context: Context) throws -> Contents {
        let layout = try Layout(bytes, context: context)
        try layout.checkDigest(of: bytes)
        let tables = try (0..<layout.tableCount).map { t in
            try (0..<layout.slots).map { s in try layout.evalPlaintext(t * layout.slots + s, in: bytes, context: context) }
        }
        return Contents(parameterBlob: Array(bytes[layout.headerBytes..<layout.presenceStart]), tables: tables)
    }

    /// Parses and verifies a shard file as `deserialize` does and checks its tables against `parameters` as
    /// `ProcessedDatabase` does, straight into the 32-bit scan layout (`d0` slots per column): each plaintext is made
    /// and packed in turn, so a load holds the matrices and one plaintext rather than every plaintext in 64-bit words
    /// as well (2.5 times the matrices). Nil when the moduli or degree do not fit that layout.
    static func matrices(_ bytes: [UInt8], context: Context, parameters: MulPirParameters) throws -> [DatabaseMatrix]? {
        let ctx = context.ciphertextContext
        guard DatabaseMatrix.supports(ctx.moduli, degree: context.degree) else { return nil }
        let layout = try Layout(bytes, context: context)
        try layout.checkDigest(of: bytes)
        // The checks `ProcessedDatabase` makes of its tables, before anything is built.
        try ProcessedDatabase.checkTableCount(layout.tableCount, parameters: parameters)
        try ProcessedDatabase.checkSlotCount(layout.slots, parameters: parameters)
        return try (0..<layout.tableCount).map { t in
            try DatabaseMatrix(slots: layout.slots, rows: ctx.rowCount, degree: context.degree,
                               columnHeight: parameters.dimensions[0]) { s in
                try layout.evalPlaintext(t * layout.slots + s, in: bytes, context: context)
            }
        }
    }

    static func pageAligned(_ x: Int) -> Int { (x + 4095) / 4096 * 4096 }

    static func appendLE(_ v: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: v))
        out.append(UInt8(truncatingIfNeeded: v >> 8))
        out.append(UInt8(truncatingIfNeeded: v >> 16))
        out.append(UInt8(truncatingIfNeeded: v >> 24))
    }
}
