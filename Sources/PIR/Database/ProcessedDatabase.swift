import BFV

/// A shard's processed database: for each cuckoo sub-table, `chunkCount · d0 · d1` evaluation-form plaintexts
/// in storage order (nil = all-zero, skipped in products), ready for the server's matrix-vector product.
public struct ProcessedDatabase: Sendable {
    /// The shard's parameters.
    public let parameters: MulPirParameters
    /// One plaintext list per sub-table (one database when `batchSize` queries share it).
    public let tables: [[EvalPlaintext?]]

    /// Wraps plaintext lists; each must have `chunkCount · slotsPerChunk` entries over the ciphertext moduli.
    public init(parameters: MulPirParameters, tables: [[EvalPlaintext?]], context: Context) throws {
        try Self.checkTableCount(tables.count, parameters: parameters)
        for t in tables {
            try Self.checkSlotCount(t.count, parameters: parameters)
            for case let p? in t where p.poly.context != context.ciphertextContext {
                throw PIRError.malformedDatabase("plaintext moduli do not match the ciphertext moduli")
            }
        }
        self.parameters = parameters
        self.tables = tables
    }

    /// The database of a shard file (`ShardFile`, either version), checked against `parameters`.
    public init(shardFile bytes: [UInt8], parameters: MulPirParameters, context: Context) throws {
        try self.init(parameters: parameters, tables: try ShardFile.deserialize(bytes, context: context).tables, context: context)
    }

    /// Throws unless `count` sub-table databases fit `parameters`: one database, or one per sub-table of a batch.
    package static func checkTableCount(_ count: Int, parameters: MulPirParameters) throws {
        guard count >= 1, count == 1 || count >= parameters.batchSize else {
            throw PIRError.malformedDatabase("\(count) sub-table databases for batch size \(parameters.batchSize)")
        }
    }

    /// Throws unless a sub-table of `count` plaintext slots fits `parameters` (`chunkCount · slotsPerChunk`).
    package static func checkSlotCount(_ count: Int, parameters: MulPirParameters) throws {
        let expected = parameters.chunkCount * parameters.slotsPerChunk
        guard count == expected else {
            throw PIRError.malformedDatabase("sub-table has \(count) plaintext slots, expected \(expected)")
        }
    }

    /// Encodes each sub-table's entries and converts them to evaluation form.
    public init(parameters: MulPirParameters, tableEntries: [[[UInt8]]], context: Context) throws {
        let tables = try tableEntries.map { entries in
            try DatabaseEncoding.encode(entries: entries, parameters: parameters).map { values -> EvalPlaintext? in
                guard let values else { return nil }
                return try context.evalPlaintext(context.encodeCoefficients(values))
            }
        }
        try self.init(parameters: parameters, tables: tables, context: context)
    }

    /// The reference's processed-shard file (SPEC-PIR §3.6): `version:u8 = 1`, `count:u32 LE`, then per slot a
    /// tag byte (0 absent, 1 present) and, when present, the packed evaluation rows; sub-tables back to back.
    public func serializeReferenceFormat() -> [UInt8] {
        let all = tables.flatMap { $0 }
        var out: [UInt8] = [1]
        let count = UInt32(all.count)
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: count >> UInt32(8 * i))) }
        for slot in all {
            if let slot {
                out.append(1)
                out.append(contentsOf: slot.serialize())
            } else {
                out.append(0)
            }
        }
        return out
    }

    /// Parses the reference's processed-shard file, validating version, counts, tags, lengths and values.
    public init(referenceFormat bytes: [UInt8], parameters: MulPirParameters, context: Context) throws {
        guard bytes.count >= 5, bytes[0] == 1 else { throw PIRError.malformedDatabase("unknown version or short header") }
        let count = Int(bytes[1]) | Int(bytes[2]) << 8 | Int(bytes[3]) << 16 | Int(bytes[4]) << 24
        let perTable = parameters.chunkCount * parameters.slotsPerChunk
        guard count > 0, count % perTable == 0 else {
            throw PIRError.malformedDatabase("\(count) plaintext slots is not a multiple of \(perTable)")
        }
        // Every slot takes at least its tag byte: a count the file cannot hold is refused before anything is
        // reserved for it (a 4-byte count would otherwise ask for up to 2^32 slots).
        guard count <= bytes.count - 5 else {
            throw PIRError.malformedDatabase("\(count) plaintext slots declared in \(bytes.count) bytes")
        }
        let ctx = context.ciphertextContext
        let polyBytes = CoefficientPacking.polyByteCount(context: ctx)
        var pos = 5
        var slots: [EvalPlaintext?] = []
        slots.reserveCapacity(count)
        for _ in 0..<count {
            guard pos < bytes.count else { throw PIRError.malformedDatabase("truncated at a slot tag") }
            let tag = bytes[pos]
            pos += 1
            switch tag {
            case 0:
                slots.append(nil)
            case 1:
                guard pos + polyBytes <= bytes.count else { throw PIRError.malformedDatabase("truncated plaintext") }
                let (poly, _) = try bytes.withUnsafeBytes { raw in
                    try CoefficientPacking.deserialize(UnsafeRawBufferPointer(rebasing: raw[pos..<(pos + polyBytes)]),
                                                       context: ctx, format: .eval)
                }
                slots.append(try EvalPlaintext(poly: poly))
                pos += polyBytes
            default:
                throw PIRError.malformedDatabase("unknown slot tag \(tag)")
            }
        }
        guard pos == bytes.count else { throw PIRError.malformedDatabase("\(bytes.count - pos) trailing bytes") }
        let tables = stride(from: 0, to: count, by: perTable).map { Array(slots[$0..<($0 + perTable)]) }
        try self.init(parameters: parameters, tables: tables, context: context)
    }
}
