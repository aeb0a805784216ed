import BFV
import CKernels
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// The MulPIR server core (SPEC-PIR §5) for one shard: query expansion, the first dimension (a multithreaded,
/// batched matrix-vector product over the database), the second dimension (ciphertext × ciphertext products
/// summed with one scaling and one relinearization) and the modulus switch to `q_0`.
public struct MulPirServer: Sendable {
    /// The BFV context of the shard.
    public let context: Context
    /// The shard's parameters.
    public let parameters: MulPirParameters
    /// Worker threads for the scan and for independent queries of a batch.
    public let threads: Int
    /// Whether queries take the fused 32-bit pipeline when the parameters allow it (tests turn it off to compare
    /// against the engine's general operations).
    var fusedPipeline = true
    /// Per sub-table: the 32-bit matrix when the moduli allow it, else the evaluation plaintexts.
    let tables: [Storage]

    enum Storage: Sendable {
        case narrow(DatabaseMatrix)
        case wide([EvalPlaintext?])
    }

    /// A server for one shard; `threads` defaults to every core. The first server tunes the process allocator.
    public init(context: Context, database: ProcessedDatabase, threads: Int? = nil) throws {
        let ctx = context.ciphertextContext
        let narrow = DatabaseMatrix.supports(ctx.moduli, degree: context.degree)
        let height = database.parameters.dimensions[0]
        try self.init(context: context, parameters: database.parameters, threads: threads, tables: database.tables.map { table in
            narrow ? .narrow(DatabaseMatrix(plaintexts: table, rows: ctx.rowCount, degree: context.degree,
                                            columnHeight: height)) : .wide(table)
        })
    }

    /// A server over storage built (or mapped, or copied from a scan file) for `parameters`; the first server tunes
    /// the process allocator.
    init(context: Context, parameters: MulPirParameters, threads: Int?, tables: [Storage]) throws {
        _ = Self.allocatorTuned
        guard parameters.encryption == context.parameters else {
            throw PIRError.invalidParameters("database and context have different encryption parameters")
        }
        self.context = context
        self.parameters = parameters
        self.threads = max(1, threads ?? Self.coreCount)
        self.tables = tables
    }

    /// Cores this process may use: its CPU affinity (taskset, cpusets) and cgroup CPU quota, not every core of the
    /// machine, so a server confined to fewer cores does not run more threads than it has.
    public static let coreCount: Int = max(Int(cv_usable_cores()), 1)

    /// Bytes of database the server scans per query (every present plaintext once).
    public var databaseBytes: Int {
        tables.reduce(0) { total, storage in
            switch storage {
            case .narrow(let m): return total + m.byteCount
            case .wide(let pts): return total + pts.compactMap { $0 }.count * context.ciphertextContext.rowCount * context.degree * 8
            }
        }
    }

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
        let depth = ceilLog2(min(p.expandedQueryCount, context.degree))
        let expansion = QueryExpansion(context: context, evaluationKey: evaluationKey)
        for level in stride(from: 1, through: depth, by: 1) { _ = try expansion.plan(level: level) }
        if p.dimensions.count == 2, evaluationKey.relinearizationKey == nil {
            throw PIRError.missingEvaluationKey("relinearization key")
        }
    }

    /// Answers one query: `batchSize` replies, each `chunkCount` ciphertexts over `q_0` in coefficient form,
    /// ready for `serialize(forDecryption: true)`.
    public func computeResponse(query: [Ciphertext], pirCalls: Int, evaluationKey: EvaluationKey) throws -> [[Ciphertext]] {
        try computeResponses(queries: [(query, pirCalls, evaluationKey)])[0]
    }

    /// Answers several queries for this shard in one pass over the database: expansions and second dimensions
    /// run concurrently, and the first-dimension scan loads each plaintext once for the whole batch.
    public func computeResponses(queries: [(query: [Ciphertext], pirCalls: Int, evaluationKey: EvaluationKey)]) throws
        -> [[[Ciphertext]]] {
        var timings = ServerTimings()
        return try computeResponses(queries: queries, timings: &timings)
    }

    /// `computeResponses(queries:)`, also reporting where the time went.
    public func computeResponses(queries: [(query: [Ciphertext], pirCalls: Int, evaluationKey: EvaluationKey)],
                                 timings: inout ServerTimings) throws -> [[[Ciphertext]]] {
        var clock = DispatchTime.now().uptimeNanoseconds
        func lap() -> Double {
            let now = DispatchTime.now().uptimeNanoseconds
            defer { clock = now }
            return Double(now - clock) / 1e9
        }
        for q in queries { try validate(query: q.query, pirCalls: q.pirCalls, evaluationKey: q.evaluationKey) }
        if fusedPipeline, let kernel = context.narrowKeySwitch,
           tables.allSatisfy({ if case .narrow = $0 { true } else { false } }) {
            return try computeNarrow(queries: queries, kernel: kernel, timings: &timings, lap: lap)
        }
        let p = parameters
        let s = p.selectorsPerIndex
        let d0 = p.dimensions[0]
        // 1. Expansion: one query per thread, or a single query's tree over all threads.
        let treeThreads = queries.count == 1 ? threads : 1
        let expanded = try concurrentMap(queries.count) { i in
            try expand(queries[i].query, evaluationKey: queries[i].evaluationKey, threads: treeThreads)
        }
        timings.expansion += lap()
        // 2. First dimension per sub-table and chunk, batched over queries; when every PIR call reads the same
        //    table (one sub-table), all calls of all queries share one pass over it.
        var columns = [[[[Ciphertext]]]](repeating: [], count: queries.count)  // [query][j][chunk] -> columns
        for i in columns.indices { columns[i] = Array(repeating: [], count: p.batchSize) }
        let first = FirstDimension(context: context, parameters: p, threads: threads)
        let passes = self.passes
        for calls in passes {
            let table = tables.count == 1 ? tables[0] : tables[calls[0]]
            // Streams of this pass: (query i, call j) pairs in order.
            let pairs = queries.indices.flatMap { i in calls.map { j in (i, j) } }
            let rowSelectors = pairs.map { i, j in expanded[i][(j * s)..<(j * s + d0)].map { $0.converted(to: .eval) } }
            for chunk in 0..<p.chunkCount {
                let result: [[Ciphertext]]
                switch table {
                case .narrow(let matrix):
                    result = try first.compute(selectors: rowSelectors, matrix: matrix, chunk: chunk)
                case .wide(let plaintexts):
                    result = try rowSelectors.map { try wideColumns(selectors: $0, plaintexts: plaintexts, chunk: chunk) }
                }
                for (k, (i, j)) in pairs.enumerated() { columns[i][j].append(result[k]) }
            }
        }
        timings.firstDimension += lap()
        timings.scannedBytes += databaseBytes / max(tables.count, 1) * passes.count
        // 3. Second dimension and modulus switch, one query per thread.
        let firstDimension = columns
        defer { timings.secondDimension += lap() }
        // One task per (query, PIR call), so a single query's replies also use every thread.
        let calls = p.batchSize
        let replies = try concurrentMap(queries.count * calls) { task in
            let (i, j) = (task / calls, task % calls)
            let selectors = Array(expanded[i][(j * s + d0)..<((j + 1) * s)])
            return try (0..<p.chunkCount).map { chunk in
                let reply = try secondDimension(selectors: selectors, columns: firstDimension[i][j][chunk],
                                                evaluationKey: queries[i].evaluationKey)
                return try context.modSwitchDownToSingle(reply)
            }
        }
        return (0..<queries.count).map { i in Array(replies[(i * calls)..<((i + 1) * calls)]) }
    }

    /// The 32-bit path: expansion runs in evaluation form and its leaves stay 32-bit words, the row selectors
    /// go straight into the scan's layout and the second dimension's selectors into the tensor kernel.
    private func computeNarrow(queries: [(query: [Ciphertext], pirCalls: Int, evaluationKey: EvaluationKey)],
                               kernel: NarrowKeySwitch, timings: inout ServerTimings, lap: () -> Double) throws
        -> [[[Ciphertext]]] {
        let p = parameters
        let s = p.selectorsPerIndex
        let d0 = p.dimensions[0]
        // 1. Expansion: one query per thread, or a single query's tree over all threads. The leaves come out in
        //    evaluation form, in one buffer per query that the scan and the second dimension read in place.
        let treeThreads = queries.count == 1 ? threads : 1
        let half = context.ciphertextContext.rowCount * context.degree
        let expanded: [SelectorWords] = try concurrentMap(queries.count) { i in
            let expansion = QueryExpansion(context: context, evaluationKey: queries[i].evaluationKey, threads: treeThreads)
            let output = try SelectorWords(count: p.expandedQueryCount, leafWords: kernel.ciphertextWords)
            _ = try expandEach(queries[i].query) { ct, first, count -> [Void] in
                guard try expansion.expandWords(ct, count: count, evaluationForm: true, into: output, firstLeaf: first)
                else { throw PIRError.invalidQuery("query ciphertexts do not fit the 32-bit expansion") }
                return []
            }
            return output
        }
        timings.expansion += lap()
        // 2. First dimension, one pass per sub-table for every (query, call) pair reading it; columns stay
        //    32-bit evaluation-form words.
        //    With one chunk, each call's columns are written over its row selectors, which the pass has finished
        //    reading (`computeOverSelectors`): a query then holds no column buffer beside its selectors.
        let passes = self.passes
        let first = FirstDimension(context: context, parameters: p, threads: threads)
        let overSelectors = first.columnsFitOverSelectors()
        var columns = [[[[ArraySlice<UInt32>]]]](repeating: [], count: queries.count)  // [query][j][chunk][column]
        for i in columns.indices { columns[i] = Array(repeating: [], count: p.batchSize) }
        for calls in passes {
            guard case .narrow(let matrix) = tables.count == 1 ? tables[0] : tables[calls[0]] else { continue }
            let pairs = queries.indices.flatMap { i in calls.map { j in (i, j) } }
            let selectors = try ScanSelectors(pairs.map { i, j in (expanded[i], j * s) }, rows: d0, half: half)
            if overSelectors {
                try first.computeOverSelectors(selectors: selectors, matrix: matrix, chunk: 0)
                continue
            }
            for chunk in 0..<p.chunkCount {
                let result = try first.computeWords(selectors: selectors, matrix: matrix, chunk: chunk)
                for (k, (i, j)) in pairs.enumerated() { columns[i][j].append(result[k]) }
            }
        }
        timings.firstDimension += lap()
        timings.scannedBytes += databaseBytes / max(tables.count, 1) * passes.count
        // 3. Second dimension and modulus switch, one task per (query, PIR call): selector (evaluation form) ×
        //    column (evaluation form) products summed on 32-bit words, one scaling, one relinearization.
        let firstDimension = columns
        defer { timings.secondDimension += lap() }
        let calls = p.batchSize
        let twoDimensional = p.dimensions.count == 2
        let replies = try concurrentMap(queries.count * calls) { task in
            let (i, j) = (task / calls, task % calls)
            let selectors = ((j * s + d0)..<((j + 1) * s)).map { SelectorLeaf(words: expanded[i], index: $0) }
            // Σ selector ⊗ column over the call's columns, one scaling, one relinearization.
            func product<Column: CiphertextWords>(_ cols: [Column]) throws -> Ciphertext {
                let pairs = zip(selectors, cols).map { (a: $0, aEval: true, b: $1, bEval: true) }
                let sum = try sumOfProducts(pairs) { try context.multiplyAccumulate(words: $0) }
                return try kernel.relinearize(sum, key: queries[i].evaluationKey, context: context,
                                              scratch: kernel.makeScratch())
            }
            return try (0..<p.chunkCount).map { chunk in
                let reply: Ciphertext
                if overSelectors {
                    // Column c lies over row selector c of this call.
                    reply = try product((0..<p.dimensions[1]).map { SelectorLeaf(words: expanded[i], index: j * s + $0) })
                } else if twoDimensional {
                    reply = try product(firstDimension[i][j][chunk])
                } else {
                    reply = try kernel.ciphertext(words: Array(firstDimension[i][j][chunk][0]), format: .eval,
                                                  context: context).converted(to: .coeff)
                }
                return try context.modSwitchDownToSingle(reply)
            }
        }
        return (0..<queries.count).map { i in Array(replies[(i * calls)..<((i + 1) * calls)]) }
    }

    /// Products one ciphertext-product scaling may sum (the auxiliary base's headroom).
    static let maxProductsPerScaling = 1 << 12

    /// The first-dimension passes: every PIR call in one pass when all calls read the one sub-table, else one pass
    /// per call over its own sub-table.
    private var passes: [[Int]] {
        tables.count == 1 ? [Array(0..<parameters.batchSize)] : (0..<parameters.batchSize).map { [$0] }
    }

    /// `Σ a_i ⊗ b_i` over all pairs: `multiplyAccumulate` scales at most `maxProductsPerScaling` products at once,
    /// so longer sums add scaled partial sums.
    private func sumOfProducts<Pair>(_ pairs: [Pair], _ multiplyAccumulate: ([Pair]) throws -> Ciphertext) throws
        -> Ciphertext {
        var sum: Ciphertext?
        for start in stride(from: 0, to: pairs.count, by: Self.maxProductsPerScaling) {
            let part = try multiplyAccumulate(Array(pairs[start..<min(start + Self.maxProductsPerScaling, pairs.count)]))
            sum = try sum.map { try context.add($0, part) } ?? part
        }
        guard let product = sum else { throw PIRError.invalidQuery("no second-dimension columns") }
        return product
    }

    /// Runs `expand(ciphertext, first, count)` on each query ciphertext, each expanding to the next (at most N) of
    /// the `expandedQueryCount` selectors, `first` being the index of its first one, and concatenates the outputs.
    private func expandEach<T>(_ query: [Ciphertext], _ expand: (Ciphertext, Int, Int) throws -> [T]) throws -> [T] {
        var out: [T] = []
        out.reserveCapacity(parameters.expandedQueryCount)
        var first = 0
        for ct in query {
            let count = min(parameters.expandedQueryCount - first, context.degree)
            out.append(contentsOf: try expand(ct, first, count))
            first += count
        }
        return out
    }

    /// Expands one query into `(d0 + d1) · batch` selector ciphertexts.
    func expand(_ query: [Ciphertext], evaluationKey: EvaluationKey, threads: Int) throws -> [Ciphertext] {
        let expansion = QueryExpansion(context: context, evaluationKey: evaluationKey, threads: threads)
        return try expandEach(query) { ct, _, count in try expansion.expand(ct, count: count) }
    }

    /// First dimension with 64-bit plaintexts (moduli above 30 bits): one inner product per column.
    func wideColumns(selectors: [Ciphertext], plaintexts: [EvalPlaintext?], chunk: Int) throws -> [Ciphertext] {
        let d0 = parameters.dimensions[0]
        let d1 = parameters.dimensions.count == 2 ? parameters.dimensions[1] : 1
        let base = chunk * parameters.slotsPerChunk
        return try (0..<d1).map { col in
            var cts: [Ciphertext] = []
            var pts: [EvalPlaintext] = []
            for row in 0..<d0 {
                if let pt = plaintexts[base + col * d0 + row] {
                    cts.append(selectors[row])
                    pts.append(pt)
                }
            }
            return pts.isEmpty ? try Ciphertext.zero(context: context, format: .eval) : try context.innerProduct(cts, pts)
        }
    }

    /// `Σ_col selector[col] ⊗ column[col]`, scaled once and relinearized once; the column itself for 1-D.
    func secondDimension(selectors: [Ciphertext], columns: [Ciphertext], evaluationKey: EvaluationKey) throws -> Ciphertext {
        guard parameters.dimensions.count == 2 else { return columns[0].converted(to: .coeff) }
        let product = try sumOfProducts(Array(zip(selectors, columns))) { try context.multiplyAccumulate($0) }
        return try context.relinearize(product, key: evaluationKey)
    }

    /// `body(0..<count)` on up to `threads` threads, results in order; the first error is rethrown.
    func concurrentMap<T: Sendable>(_ count: Int, _ body: @Sendable (Int) throws -> T) throws -> [T] {
        if count <= 1 || threads <= 1 { return try (0..<count).map(body) }
        let results = ResultSlots<T>(count: count)
        DispatchQueue.concurrentPerform(iterations: count) { i in results.set(i, Result { try body(i) }) }
        return try results.values()
    }
}

/// Slots that concurrent workers fill, one each; read only after every worker has finished.
final class ResultSlots<T: Sendable>: @unchecked Sendable {
    private var slots: [Result<T, any Error>?]
    private let lock = PthreadMutex()

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ i: Int, _ value: Result<T, any Error>) {
        lock.withLock { slots[i] = value }
    }

    func values() throws -> [T] {
        try lock.withLock { try slots.map { try ($0 ?? .failure(PIRError.invalidQuery("missing result"))).get() } }
    }
}

/// Where a server's time went, summed over calls.
public struct ServerTimings: Sendable {
    /// Seconds spent expanding queries.
    public var expansion = 0.0
    /// Seconds in the first-dimension scan.
    public var firstDimension = 0.0
    /// Seconds in the second dimension and modulus switching.
    public var secondDimension = 0.0
    /// Database bytes the scans read.
    public var scannedBytes = 0

    /// Creates zero timings.
    public init() {}
}
