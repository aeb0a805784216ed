import BFV

/// The MulPIR client (SPEC-PIR §4, §3.5): builds the encrypted selector for a list of indices and reads
/// entries out of the decrypted replies, as Apple's client does.
public struct MulPirClient: Sendable {
    /// The BFV context.
    public let context: Context
    /// The shard's parameters.
    public let parameters: MulPirParameters

    /// A client for one shard's parameters.
    public init(context: Context, parameters: MulPirParameters) throws {
        guard parameters.encryption == context.parameters else {
            throw PIRError.invalidParameters("parameters and context have different encryption parameters")
        }
        self.context = context
        self.parameters = parameters
    }

    /// Query ciphertexts for one index per PIR call (`indices.count == batchSize`): one-hot selectors for row
    /// and column, each group of at most N slots scaled by `(2^ceil(log2 n_g))^{-1} mod t`.
    public func generateQuery(indices: [Int], secretKey: SecretKey) throws -> [Ciphertext] {
        let p = parameters
        guard indices.count == p.batchSize else {
            throw PIRError.invalidQuery("\(indices.count) indices for batch size \(p.batchSize)")
        }
        for i in indices where i < 0 || i >= p.entryCount {
            throw PIRError.invalidQuery("index \(i) outside 0..<\(p.entryCount)")
        }
        let s = p.selectorsPerIndex
        var selected = Set<Int>()
        for (j, index) in indices.enumerated() {
            let plaintext = p.location(ofEntry: index).plaintext
            let coords = p.coordinates(ofPlaintext: plaintext)
            selected.insert(j * s + coords[0])
            if coords.count == 2 { selected.insert(j * s + p.dimensions[0] + coords[1]) }
        }
        let n = context.degree
        let t = context.plaintextModulus
        var out: [Ciphertext] = []
        var start = 0
        while start < p.expandedQueryCount {
            let count = min(n, p.expandedQueryCount - start)
            let scale = try t.inverse(t.reduce(UInt64(1) << UInt64(ceilLog2(count))))
            var values = [UInt64](repeating: 0, count: n)
            for k in 0..<count where selected.contains(start + k) { values[k] = scale }
            out.append(try context.encrypt(context.encodeCoefficients(values), secretKey: secretKey))
            start += count
        }
        return out
    }

    /// The entry bytes for `index` from its reply (`chunkCount` ciphertexts over `q_0`).
    public func decrypt(reply: [Ciphertext], index: Int, secretKey: SecretKey) throws -> [UInt8] {
        let p = parameters
        guard reply.count == p.chunkCount else {
            throw PIRError.invalidQuery("reply has \(reply.count) ciphertexts, expected \(p.chunkCount)")
        }
        var bytes: [UInt8] = []
        for ct in reply {
            let plaintext = try context.decrypt(ct, secretKey: secretKey)
            bytes.append(contentsOf: BytePacking.bytes(from: plaintext.values, bitsPerCoefficient: p.bitsPerCoefficient)
                .prefix(p.bytesPerPlaintext))
        }
        if p.entrySize <= p.bytesPerPlaintext {
            let offset = p.location(ofEntry: index).byteOffset
            return Array(bytes[offset..<(offset + p.entrySize)])
        }
        return Array(bytes.prefix(p.entrySize))
    }
}
