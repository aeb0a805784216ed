import BFV

/// Turns index-PIR entries into plaintexts in the reference's storage order (SPEC-PIR §3.2–§3.5): small
/// entries packed several per plaintext, large ones split into chunks, each chunk's `d0·d1` plaintexts stored
/// column-major, chunks one after another. All-zero plaintexts are `nil` ("absent").
public enum DatabaseEncoding {
    /// Coefficient plaintext values (N each, or nil when all zero) for one sub-table's entries.
    public static func encode(entries: [[UInt8]], parameters: MulPirParameters) throws -> [[UInt64]?] {
        guard entries.count <= parameters.entryCount else {
            throw PIRError.invalidDatabase("\(entries.count) entries for a database of \(parameters.entryCount)")
        }
        for e in entries where e.count > parameters.entrySize {
            throw PIRError.invalidDatabase("entry of \(e.count) bytes exceeds entry size \(parameters.entrySize)")
        }
        let p = parameters.bytesPerPlaintext
        let bits = parameters.bitsPerCoefficient
        let n = parameters.encryption.polyDegree
        let slots = parameters.slotsPerChunk
        var out = [[UInt64]?](repeating: nil, count: slots * parameters.chunkCount)
        func store(_ bytes: [UInt8], chunk: Int, plaintext: Int) {
            guard bytes.contains(where: { $0 != 0 }) else { return }
            var coeffs = BytePacking.coefficients(from: bytes, bitsPerCoefficient: bits)
            coeffs.append(contentsOf: repeatElement(0, count: n - coeffs.count))
            out[chunk * slots + parameters.storageSlot(ofPlaintext: plaintext)] = coeffs
        }
        if parameters.entrySize <= p {
            let perPlaintext = parameters.entriesPerPlaintext
            var index = 0
            var plaintext = 0
            while index < entries.count {
                var bytes = [UInt8]()
                bytes.reserveCapacity(perPlaintext * parameters.entrySize)
                for e in entries[index..<min(index + perPlaintext, entries.count)] {
                    bytes.append(contentsOf: e)
                    bytes.append(contentsOf: repeatElement(0, count: parameters.entrySize - e.count))
                }
                store(bytes, chunk: 0, plaintext: plaintext)
                index += perPlaintext
                plaintext += 1
            }
        } else {
            for (i, e) in entries.enumerated() {
                for chunk in 0..<parameters.chunkCount {
                    let start = chunk * p
                    guard start < e.count else { break }
                    store(Array(e[start..<min(start + p, e.count)]), chunk: chunk, plaintext: i)
                }
            }
        }
        return out
    }
}
