import BFV

/// Turns index-PIR entries into plaintexts in the reference's storage order (SPEC-PIR §3.2–§3.5): small
/// entries packed several per plaintext, large ones split into chunks, each chunk's `d0·d1` plaintexts stored
/// column-major, chunks one after another. All-zero plaintexts are `nil` ("absent").
///
/// A plaintext is first its payload, `bytesPerPlaintext` bytes (what a shard file stores), then the coefficients
/// those bytes pack into (`BytePacking`).
public enum DatabaseEncoding {
    /// Coefficient plaintext values (N each, or nil when all zero) for one sub-table's entries.
    public static func encode(entries: [[UInt8]], parameters: MulPirParameters) throws -> [[UInt64]?] {
        try payloads(entries: entries, parameters: parameters).map { $0.map { values(of: $0, parameters: parameters) } }
    }

    /// Plaintext payloads (`bytesPerPlaintext` bytes each, or nil when all zero) for one sub-table's entries.
    public static func payloads(entries: [[UInt8]], parameters: MulPirParameters) throws -> [[UInt8]?] {
        try check(entryCount: entries.count, parameters: parameters)
        var out = [[UInt8]?](repeating: nil, count: parameters.slotsPerChunk * parameters.chunkCount)
        let plaintexts = (entries.count + parameters.entriesPerPlaintext - 1) / parameters.entriesPerPlaintext
        for plaintext in 0..<plaintexts {
            for (slot, payload) in try payloads(plaintext: plaintext, entryCount: entries.count, entry: { entries[$0] }, parameters: parameters) {
                out[slot] = payload
            }
        }
        return out
    }

    /// The storage slots (chunk offset included) and payloads of one plaintext index of a sub-table whose
    /// `entryCount` entries `entry(i)` returns: one slot when entries are packed, one per chunk when they are split.
    /// An update encodes only the plaintexts of the buckets it changed this way.
    public static func payloads(plaintext: Int, entryCount: Int, entry: (Int) -> [UInt8],
                                parameters: MulPirParameters) throws -> [(slot: Int, payload: [UInt8]?)] {
        try check(entryCount: entryCount, parameters: parameters)
        let p = parameters.bytesPerPlaintext
        let slot = parameters.storageSlot(ofPlaintext: plaintext)
        if parameters.entrySize <= p {
            var bytes = [UInt8](repeating: 0, count: p)
            var at = 0
            for index in (plaintext * parameters.entriesPerPlaintext)..<min((plaintext + 1) * parameters.entriesPerPlaintext, entryCount) {
                let e = try checked(entry(index), parameters: parameters)
                bytes.replaceSubrange(at..<(at + e.count), with: e)
                at += parameters.entrySize
            }
            return [(slot, nonZero(bytes))]
        }
        let e = try checked(entry(plaintext), parameters: parameters)
        return (0..<parameters.chunkCount).map { chunk in
            let start = chunk * p
            var bytes = [UInt8](repeating: 0, count: p)
            if start < e.count { bytes.replaceSubrange(0..<(min(start + p, e.count) - start), with: e[start..<min(start + p, e.count)]) }
            return (chunk * parameters.slotsPerChunk + slot, nonZero(bytes))
        }
    }

    /// The plaintext index holding entry `index` of a sub-table.
    public static func plaintext(ofEntry index: Int, parameters: MulPirParameters) -> Int {
        parameters.entrySize <= parameters.bytesPerPlaintext ? index / parameters.entriesPerPlaintext : index
    }

    /// Entry `index` of a sub-table (`entrySize` bytes, padding included) from the sub-table's payloads by slot: the
    /// inverse of `payloads`, with which an update reads the buckets a previous build stored.
    public static func entry(_ index: Int, payload: (Int) -> [UInt8]?, parameters: MulPirParameters) -> [UInt8] {
        let p = parameters.bytesPerPlaintext
        let slot = parameters.storageSlot(ofPlaintext: plaintext(ofEntry: index, parameters: parameters))
        if parameters.entrySize <= p {
            let at = (index % parameters.entriesPerPlaintext) * parameters.entrySize
            guard let bytes = payload(slot) else { return [UInt8](repeating: 0, count: parameters.entrySize) }
            return Array(bytes[at..<(at + parameters.entrySize)])
        }
        var out: [UInt8] = []
        out.reserveCapacity(parameters.chunkCount * p)
        for chunk in 0..<parameters.chunkCount {
            out.append(contentsOf: payload(chunk * parameters.slotsPerChunk + slot) ?? [UInt8](repeating: 0, count: p))
        }
        return out
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

    static func nonZero(_ bytes: [UInt8]) -> [UInt8]? { bytes.contains(where: { $0 != 0 }) ? bytes : nil }

    /// A plaintext's N coefficient values from its payload.
    public static func values(of payload: [UInt8], parameters: MulPirParameters) -> [UInt64] {
        values(of: payload, bitsPerCoefficient: parameters.bitsPerCoefficient, degree: parameters.encryption.polyDegree)
    }

    /// N coefficient values from a payload packed at `bitsPerCoefficient` bits.
    public static func values(of payload: some Collection<UInt8>, bitsPerCoefficient: Int, degree: Int) -> [UInt64] {
        var coeffs = BytePacking.coefficients(from: payload, bitsPerCoefficient: bitsPerCoefficient)
        coeffs.append(contentsOf: repeatElement(0, count: max(degree - coeffs.count, 0)))
        return coeffs
    }
}
