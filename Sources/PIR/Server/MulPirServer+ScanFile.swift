import BFV

extension MulPirServer {
    /// Whether the whole database is in the 32-bit scan layout, which is what a scan file stores.
    public var supportsScanFile: Bool {
        tables.allSatisfy { if case .narrow = $0 { return true } else { return false } }
    }

    /// Bytes of the database served from a file mapping (paged by the kernel) rather than this process's memory.
    public var mappedBytes: Int {
        tables.reduce(0) { total, storage in
            if case .narrow(let m) = storage, m.words.isMapped { return total + m.byteCount }
            return total
        }
    }

    /// Writes the database's scan layout to `path` (see `ScanFile`), tagged with the content it was derived from.
    public func writeScanFile(path: String, tag: [UInt8]) throws {
        let matrices = try tables.map { storage -> DatabaseMatrix in
            guard case .narrow(let m) = storage else { throw PIRError.invalidParameters("only 32-bit databases have a scan file") }
            return m
        }
        try ScanFile.write(matrices, tag: tag, to: path)
    }

    /// A server whose database is mapped from the scan file at `path`, which must carry `tag` and match
    /// `parameters` (tables, slots, `d0`) and the context's moduli and degree; its SHA-256 is checked.
    public init(context: Context, parameters: MulPirParameters, scanFile path: String, tag: [UInt8], threads: Int? = nil) throws {
        let ctx = context.ciphertextContext
        guard DatabaseMatrix.supports(ctx.moduli, degree: context.degree) else {
            throw PIRError.invalidParameters("only 32-bit databases have a scan file")
        }
        let matrices = try ScanFile.map(path: path, tag: tag, slots: parameters.chunkCount * parameters.slotsPerChunk,
                                        rows: ctx.rowCount, degree: context.degree, columnHeight: parameters.dimensions[0])
        // One database, or one per sub-table when a batch shares none (as `ProcessedDatabase` allows).
        guard matrices.count == 1 || matrices.count >= parameters.batchSize else {
            throw PIRError.malformedDatabase("scan file \(path): \(matrices.count) tables for batch size \(parameters.batchSize)")
        }
        try self.init(context: context, parameters: parameters, threads: threads, tables: matrices.map { .narrow($0) })
    }

    /// The same server with any mapped database copied into this process's memory (huge pages when available),
    /// for shards that fit the memory budget: the scan then never waits on the page cache.
    public func residentCopy() throws -> MulPirServer {
        guard mappedBytes > 0 else { return self }
        let copied = tables.map { storage -> Storage in
            guard case .narrow(let m) = storage, m.words.isMapped else { return storage }
            return .narrow(DatabaseMatrix(words: m.words.copiedToMemory(), present: m.present, slots: m.slots, rows: m.rows,
                                          degree: m.degree, columnHeight: m.columnHeight))
        }
        var server = try MulPirServer(context: context, parameters: parameters, threads: threads, tables: copied)
        server.fusedPipeline = fusedPipeline
        return server
    }
}
