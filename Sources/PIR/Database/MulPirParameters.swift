import BFV

/// The index-PIR parameters of one shard (MulPIR, SPEC-PIR §3–§4, §6.1) and everything derived from them:
/// plaintext capacity, entries per plaintext, chunks, selector layout and the Galois elements the query
/// expansion needs.
public struct MulPirParameters: Sendable, Hashable {
    /// The BFV parameters.
    public let encryption: EncryptionParameters
    /// Entries per sub-table database (`num_entries`: buckets per cuckoo sub-table).
    public let entryCount: Int
    /// Bytes per entry (`entry_size`).
    public let entrySize: Int
    /// One or two dimensions, `d0 · d1 ≥ plaintexts per chunk`.
    public let dimensions: [Int]
    /// Indices per query (`num_pir_calls`): the number of cuckoo hash functions.
    public let batchSize: Int

    /// Validates and creates parameters.
    public init(encryption: EncryptionParameters, entryCount: Int, entrySize: Int, dimensions: [Int], batchSize: Int) throws {
        guard entryCount >= 1, entrySize >= 1, batchSize >= 1, batchSize <= 64 else {
            throw PIRError.invalidParameters("entries \(entryCount), entry size \(entrySize), batch \(batchSize)")
        }
        guard dimensions.count == 1 || dimensions.count == 2, dimensions.allSatisfy({ $0 >= 1 && $0 <= 1 << 20 }) else {
            throw PIRError.invalidParameters("dimensions \(dimensions): 1 or 2 positive values are supported")
        }
        guard encryption.bytesPerPlaintext > 0 else { throw PIRError.invalidParameters("plaintext modulus too small") }
        self.encryption = encryption
        self.entryCount = entryCount
        self.entrySize = entrySize
        self.dimensions = dimensions
        self.batchSize = batchSize
        guard slotsPerChunk >= plaintextsPerChunk else {
            throw PIRError.invalidParameters("dimensions \(dimensions) hold \(slotsPerChunk) plaintexts, \(plaintextsPerChunk) needed")
        }
        guard encryption.plaintextModulus & 1 == 1 else { throw PIRError.invalidParameters("plaintext modulus must be odd") }
    }

    /// `floor(log2 t)`: payload bits per coefficient.
    public var bitsPerCoefficient: Int { 63 - encryption.plaintextModulus.leadingZeroBitCount }
    /// Payload bytes per plaintext `P`.
    public var bytesPerPlaintext: Int { encryption.bytesPerPlaintext }
    /// Entries packed in one plaintext (`floor(P/E)`, or 1 for entries larger than a plaintext).
    public var entriesPerPlaintext: Int { entrySize <= bytesPerPlaintext ? bytesPerPlaintext / entrySize : 1 }
    /// Plaintexts (ciphertexts per reply) an entry spans: `ceil(E/P)`.
    public var chunkCount: Int { (entrySize + bytesPerPlaintext - 1) / bytesPerPlaintext }
    /// Plaintexts one chunk needs: `ceil(entries / entriesPerPlaintext)`.
    public var plaintextsPerChunk: Int { (entryCount + entriesPerPlaintext - 1) / entriesPerPlaintext }
    /// Stored plaintext slots per chunk: `d0 · d1`.
    public var slotsPerChunk: Int { dimensions.reduce(1, *) }
    /// Selector slots per index: `d0 + d1`.
    public var selectorsPerIndex: Int { dimensions.reduce(0, +) }
    /// Expanded ciphertexts per query: `(d0 + d1) · batch`.
    public var expandedQueryCount: Int { selectorsPerIndex * batchSize }
    /// Ciphertexts in a query: `ceil(expanded / N)`.
    public var queryCiphertextCount: Int { (expandedQueryCount + encryption.polyDegree - 1) / encryption.polyDegree }

    /// Plaintext index and byte offset of entry `index` (chunk 0).
    public func location(ofEntry index: Int) -> (plaintext: Int, byteOffset: Int) {
        (index / entriesPerPlaintext, (index % entriesPerPlaintext) * entrySize)
    }

    /// Row and column of plaintext `p` (row-major: `row = p / d1`, `col = p mod d1`).
    public func coordinates(ofPlaintext p: Int) -> [Int] {
        dimensions.count == 2 ? [p / dimensions[1], p % dimensions[1]] : [p]
    }

    /// Position of plaintext `p` in a chunk's column-major storage: `col · d0 + row`.
    public func storageSlot(ofPlaintext p: Int) -> Int {
        guard dimensions.count == 2 else { return p }
        let c = coordinates(ofPlaintext: p)
        return c[1] * dimensions[0] + c[0]
    }

    /// Galois elements the expansion needs (SPEC-PIR §6.1).
    public func galoisElements(compression: KeyCompression = .none) -> [Int] {
        Self.galoisElements(expandedCount: expandedQueryCount, degree: encryption.polyDegree, compression: compression)
    }

    /// The evaluation-key config for this shard: its Galois elements (ascending) and a relinearization key.
    public func evaluationKeyConfig(compression: KeyCompression = .none) -> EvaluationKeyConfig {
        EvaluationKeyConfig(galoisElements: galoisElements(compression: compression), hasRelinearizationKey: true)
    }

    /// `[2^k + 1]` for the expansion depth of `expandedCount` outputs, with the chosen compression.
    public static func galoisElements(expandedCount: Int, degree: Int, compression: KeyCompression) -> [Int] {
        let logN = degree.trailingZeroBitCount
        let depth = ceilLog2(min(expandedCount, degree))
        let lo = logN - depth + 1
        var hi = logN
        if compression != .none { hi = max(lo, (logN + 1 + 1) / 2) }
        guard lo <= hi else { return [] }
        var elements = (lo...hi).map { (1 << $0) + 1 }
        if compression == .hybrid {
            let extra = (1 << max(hi, (logN + hi + 1) / 2)) + 1
            if !elements.contains(extra) { elements.append(extra) }
        }
        return elements.sorted()
    }

    /// The reference's dimension choice (SPEC-PIR §3.4) for `plaintexts` per chunk.
    public static func dimensions(plaintexts m: Int, dimensionCount: Int, batchSize: Int, uneven: Bool) -> [Int] {
        precondition(m >= 1 && (dimensionCount == 1 || dimensionCount == 2), "dimension request out of range")
        var r = Int(Double(m).squareRoot())
        if dimensionCount == 1 { r = m }
        // Guard against floating-point error in the root.
        if dimensionCount == 2 {
            while (r + 1) * (r + 1) <= m { r += 1 }
            while r * r > m { r -= 1 }
        }
        var dims = [Int](repeating: max(r, 1), count: dimensionCount)
        for i in 0..<dimensionCount {
            if dims.reduce(1, *) < m { dims[i] += 1 } else { break }
        }
        if uneven, dimensionCount == 2 {
            let limit = nextPowerOfTwo(dims.reduce(0, +) * batchSize)
            var candidate = dims
            while nextPowerOfTwo(candidate.reduce(0, +) * batchSize) <= limit {
                dims = candidate
                if candidate[1] == 1 { break }
                candidate[1] -= 1
                candidate[0] = (m + candidate[1] - 1) / candidate[1]
            }
        }
        return dims
    }
}

/// `ceil(log2 x)` for `x ≥ 1`.
@inlinable func ceilLog2(_ x: Int) -> Int { x <= 1 ? 0 : Int.bitWidth - (x - 1).leadingZeroBitCount }

/// The smallest power of two `≥ x`.
@inlinable func nextPowerOfTwo(_ x: Int) -> Int { x <= 1 ? 1 : 1 << ceilLog2(x) }
