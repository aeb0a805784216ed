extension KeywordDatabaseProcessor {
    /// Each sub-table's plaintext payloads (what a version-2 shard file stores) for a laid-out table.
    public static func payloads(of table: CuckooTable, parameters: MulPirParameters) throws -> [[[UInt8]?]] {
        try (0..<table.config.hashFunctionCount).map { j in
            try DatabaseEncoding.payloads(entries: table.table(j).map { $0.serialize() }, parameters: parameters)
        }
    }

    /// The cuckoo table a shard's payloads hold, for `parameters` and `config`: every bucket parsed back from its
    /// plaintexts and checked against its budget (placements are trusted, see `CuckooTable.init(config:bucketsPerTable:buckets:)`),
    /// the start of an in-place update.
    public static func restore(payloads: [[[UInt8]?]], parameters: MulPirParameters, config: CuckooTableConfig) throws -> CuckooTable {
        let slots = parameters.slotsPerChunk * parameters.chunkCount
        guard payloads.count == config.hashFunctionCount, payloads.allSatisfy({ $0.count == slots }) else {
            throw PIRError.malformedDatabase("\(payloads.count) sub-tables of \(payloads.first?.count ?? 0) slots, expected \(config.hashFunctionCount) of \(slots)")
        }
        var buckets: [HashBucket] = []
        buckets.reserveCapacity(parameters.entryCount * payloads.count)
        for table in payloads {
            for i in 0..<parameters.entryCount {
                buckets.append(try HashBucket(deserialize: DatabaseEncoding.entry(i, payload: { table[$0] }, parameters: parameters)))
            }
        }
        return try CuckooTable(config: config, bucketsPerTable: parameters.entryCount, buckets: buckets)
    }
}
