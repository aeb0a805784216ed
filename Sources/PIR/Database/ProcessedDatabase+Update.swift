import BFV

extension ProcessedDatabase {
    /// One re-encoded plaintext of an update: the sub-table, its storage slot, and its new payload (nil when it
    /// became all zero).
    public struct ChangedSlot: Sendable, Equatable {
        /// Sub-table.
        public let table: Int
        /// Storage slot in the sub-table, chunk offset included.
        public let slot: Int
        /// The new payload, `bytesPerPlaintext` bytes.
        public let payload: [UInt8]?
    }

    /// The plaintexts that hold `buckets` of `table`, encoded afresh, in (sub-table, slot) order: what an in-place
    /// update writes over the previous shard instead of encoding every plaintext again.
    public static func changedSlots(of table: CuckooTable, buckets: Set<Int>, parameters: MulPirParameters) throws -> [ChangedSlot] {
        let n = table.bucketsPerTable
        guard n == parameters.entryCount else {
            throw PIRError.invalidDatabase("\(n) buckets per table for a database of \(parameters.entryCount) entries")
        }
        var plaintexts = Set<[Int]>()
        for bucket in buckets where (0..<(n * table.config.hashFunctionCount)).contains(bucket) {
            plaintexts.insert([bucket / n, DatabaseEncoding.plaintext(ofEntry: bucket % n, parameters: parameters)])
        }
        var out: [ChangedSlot] = []
        for key in plaintexts.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let sub = table.table(key[0])
            let first = sub.startIndex
            for (slot, payload) in try DatabaseEncoding.payloads(plaintext: key[1], entryCount: n, entry: { sub[first + $0].serialize() },
                                                                 parameters: parameters) {
                out.append(ChangedSlot(table: key[0], slot: slot, payload: payload))
            }
        }
        return out
    }
}
