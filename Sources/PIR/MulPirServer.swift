import BFV

/// The MulPIR server core (SPEC-PIR §5): expansion, first dimension (ciphertext × plaintext over each column),
/// second dimension (ciphertext × ciphertext summed, one relinearization), modulus switch to `q_0`.
public struct MulPirServer: Sendable {
    /// The BFV context of the shard.
    public let context: Context
    /// The shard's processed database.
    public let database: ProcessedDatabase

    /// A server for one shard.
    public init(context: Context, database: ProcessedDatabase) throws {
        guard database.parameters.encryption == context.parameters else {
            throw PIRError.invalidParameters("database and context have different encryption parameters")
        }
        self.context = context
        self.database = database
    }

    /// The parameters of the shard.
    public var parameters: MulPirParameters { database.parameters }

    /// Checks a query against the shard's parameters before any computation (SPEC-PIR §5.1).
    public func validate(query: [Ciphertext], pirCalls: Int, evaluationKey: EvaluationKey) throws {
        let p = parameters
        guard pirCalls == p.batchSize else {
            throw PIRError.invalidQuery("num_pir_calls \(pirCalls), the shard expects \(p.batchSize)")
        }
        guard query.count == p.queryCiphertextCount else {
            throw PIRError.invalidQuery("\(query.count) query ciphertexts, the shard expects \(p.queryCiphertextCount)")
        }
        for ct in query {
            guard ct.polys.count == 2, ct.moduliCount == context.ciphertextContext.rowCount, ct.correctionFactor == 1 else {
                throw PIRError.invalidQuery("query ciphertexts must have 2 polynomials over the ciphertext moduli")
            }
        }
        let needed = p.expandedQueryCount
        let depth = ceilLog2(min(needed, context.degree))
        let expansion = QueryExpansion(context: context, evaluationKey: evaluationKey)
        for level in stride(from: 1, through: depth, by: 1) { _ = try expansion.plan(level: level) }
        if p.dimensions.count == 2, evaluationKey.relinearizationKey == nil {
            throw PIRError.missingEvaluationKey("relinearization key")
        }
    }

    /// Answers one query: `batchSize` replies, each `chunkCount` ciphertexts over `q_0` in coefficient form,
    /// ready for `serialize(forDecryption: true)`.
    public func computeResponse(query: [Ciphertext], pirCalls: Int, evaluationKey: EvaluationKey) throws -> [[Ciphertext]] {
        try validate(query: query, pirCalls: pirCalls, evaluationKey: evaluationKey)
        let p = parameters
        let n = context.degree
        let expansion = QueryExpansion(context: context, evaluationKey: evaluationKey)
        var expanded: [Ciphertext] = []
        expanded.reserveCapacity(p.expandedQueryCount)
        var remaining = p.expandedQueryCount
        for ct in query {
            let count = min(remaining, n)
            expanded.append(contentsOf: try expansion.expand(ct, count: count))
            remaining -= count
        }
        let s = p.selectorsPerIndex
        return try (0..<p.batchSize).map { j in
            let table = database.tables.count == 1 ? database.tables[0] : database.tables[j]
            let selectors = Array(expanded[(j * s)..<((j + 1) * s)])
            return try (0..<p.chunkCount).map { chunk in
                let reply = try answer(selectors: selectors, table: table, chunk: chunk, evaluationKey: evaluationKey)
                return try context.modSwitchDownToSingle(reply)
            }
        }
    }

    /// One chunk's reply for one index: the first-dimension columns, then the second dimension.
    func answer(selectors: [Ciphertext], table: [EvalPlaintext?], chunk: Int, evaluationKey: EvaluationKey) throws -> Ciphertext {
        let p = parameters
        let d0 = p.dimensions[0]
        let d1 = p.dimensions.count == 2 ? p.dimensions[1] : 1
        let rows = selectors[0..<d0].map { $0.converted(to: .eval) }
        let base = chunk * p.slotsPerChunk
        var columns: [Ciphertext] = []
        columns.reserveCapacity(d1)
        for col in 0..<d1 {
            var cts: [Ciphertext] = []
            var pts: [EvalPlaintext] = []
            for row in 0..<d0 {
                if let pt = table[base + col * d0 + row] {
                    cts.append(rows[row])
                    pts.append(pt)
                }
            }
            let column = pts.isEmpty
                ? try Ciphertext.zero(context: context, format: .eval)
                : try context.innerProduct(cts, pts)
            columns.append(column.converted(to: .coeff))
        }
        guard p.dimensions.count == 2 else { return columns[0] }
        var sum: Ciphertext?
        for col in 0..<d1 {
            let product = try context.multiply(selectors[d0 + col], columns[col])
            sum = try sum.map { try context.add($0, product) } ?? product
        }
        guard let total = sum else { return columns[0] }
        return try context.relinearize(total, key: evaluationKey)
    }
}
