import BFV

/// Turns index-PIR entries into plaintexts in the reference's storage order (SPEC-PIR §3.2–§3.5): small
/// entries packed several per plaintext, large ones split into chunks, each chunk's `d0·d1` plaintexts stored
/// column-major, chunks one after another. All-zero plaintexts are `nil` ("absent").
public enum DatabaseEncoding {
    /// Coefficient plaintext values (N each, or nil when all zero) for one sub-table's entries.
    public static func encode(entries: [[UInt8]], parameters: MulPirParameters) throws -> [[UInt64]?] {
        try check(entryCount: entries.count, parameters: parameters)
        var out = [[UInt64]?](repeating: nil, count: parameters.slotsPerChunk * parameters.chunkCount)
        let plaintexts = (entries.count + parameters.entriesPerPlaintext - 1) / parameters.entriesPerPlaintext
        for plaintext in 0..<plaintexts {
            for (slot, values) in try encode(plaintext: plaintext, entryCount: entries.count, entry: { entries[$0] }, parameters: parameters) {
                out[slot] = values
            }
        }
        return out
    }

    /// The storage slots (chunk offset included) and coefficient values of one plaintext index of a sub-table whose
    /// `entryCount` entries `entry(i)` returns: one slot when entries are packed, one per chunk when they are split.
    /// An update re-encodes only the plaintexts of the buckets it changed this way.
    public static func encode(plaintext: Int, entryCount: Int, entry: (Int) -> [UInt8],
                              parameters: MulPirParameters) throws -> [(slot: Int, values: [UInt64]?)] {
        try check(entryCount: entryCount, parameters: parameters)
        let p = parameters.bytesPerPlaintext
        let slot = parameters.storageSlot(ofPlaintext: plaintext)
        if parameters.entrySize <= p {
            let perPlaintext = parameters.entriesPerPlaintext
            var bytes = [UInt8]()
            bytes.reserveCapacity(perPlaintext * parameters.entrySize)
            for index in (plaintext * perPlaintext)..<min((plaintext + 1) * perPlaintext, entryCount) {
                let e = try checked(entry(index), parameters: parameters)
                bytes.append(contentsOf: e)
                bytes.append(contentsOf: repeatElement(0, count: parameters.entrySize - e.count))
            }
            return [(slot, values(of: bytes, parameters: parameters))]
        }
        let e = try checked(entry(plaintext), parameters: parameters)
        return (0..<parameters.chunkCount).map { chunk in
            let start = chunk * p
            let bytes = start < e.count ? Array(e[start..<min(start + p, e.count)]) : []
            return (chunk * parameters.slotsPerChunk + slot, values(of: bytes, parameters: parameters))
        }
    }

    /// The plaintext index holding entry `index` of a sub-table.
    public static func plaintext(ofEntry index: Int, parameters: MulPirParameters) -> Int {
        parameters.entrySize <= parameters.bytesPerPlaintext ? index / parameters.entriesPerPlaintext : index
    }

    static func check(entryCount: Int, parameters: MulPirParameters) throws {
        guard entryCount <= parameters.entryCount else {
            throw PIRError.invalidDatabase("\(entryCount) entries for a database of \(parameters.entryCount)")
        }
    }

    static func checked(_ e: [UInt8], parameters: MulPirParameters) throws -> [UInt8] {
        guard e.count <= parameters.entrySize else {
            throw PIRError.invalidDatabase("entry of \(e.count) bytes exceeds entry size \(parameters.entrySize)")
        }
        return e
    }

    /// A plaintext's N coefficient values from its bytes, or nil when they are all zero.
    static func values(of bytes: [UInt8], parameters: MulPirParameters) -> [UInt64]? {
        guard bytes.contains(where: { $0 != 0 }) else { return nil }
        var coeffs = BytePacking.coefficients(from: bytes, bitsPerCoefficient: parameters.bitsPerCoefficient)
        coeffs.append(contentsOf: repeatElement(0, count: parameters.encryption.polyDegree - coeffs.count))
        return coeffs
    }
}
