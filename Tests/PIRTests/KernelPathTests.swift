import ConformanceSupport
import BFV
import CKernels
@testable import PIR
import Testing

/// The fused 32-bit query pipeline against the engine's general operations, and the AVX-512 kernels against the
/// portable ones: every path must produce the same reply words, and the reply must decrypt to the right value.
@Suite("PIR server paths agree word for word", .serialized)
struct KernelPathTests {
    @Test("fused pipeline (AVX-512 and portable) equals the general pipeline on a 3,000-row block shard")
    func pathsAgree() throws {
        var rng = TestRandom()
        let numbers = ProcessingRoundTripTests.phoneNumbers(3_001, using: &rng)
        let rows = numbers.dropLast().map { (keyword: Array($0.utf8), value: [UInt8.random(in: 1...255, using: &rng)]) }
        let options = ProcessingOptions(encryption: EncryptionParameters(.n_4096_logq_27_28_28_logt_5))
        let context = try Context(parameters: options.encryption)
        let entries = try KeywordDatabaseProcessor.shard(rows: Array(rows), shardCount: 1, sharding: .sha256)[0]
        let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: options, maxValueLength: 1,
                                                         context: context)
        let sk = SecretKey(context: context)
        let key = try EvaluationKey(config: shard.evaluationKeyConfig, secretKey: sk)
        let client = try KeywordPirClient(context: context, shards: [shard.parameters], sharding: .sha256)
        let present = rows[Int.random(in: 0..<rows.count, using: &rng)]
        let asked: [([UInt8], [UInt8]?)] = [(present.keyword, present.value), (Array(numbers[numbers.count - 1].utf8), nil)]
        var server = try MulPirServer(context: context, database: shard.database, threads: 2)
        defer { _ = cv_set_level(CV_LEVEL_AVX512) }
        for (keyword, expected) in asked {
            let query = try client.generateQuery(keyword: keyword, secretKey: sk).query
            func answer(fused: Bool, level: cv_level) throws -> [[Ciphertext]] {
                server.fusedPipeline = fused
                _ = cv_set_level(level)
                return try server.computeResponse(query: query, pirCalls: shard.parameters.batchSize, evaluationKey: key)
            }
            let general = try answer(fused: false, level: CV_LEVEL_AVX512)
            let fused = try answer(fused: true, level: CV_LEVEL_AVX512)
            let portable = try answer(fused: true, level: CV_LEVEL_PORTABLE)
            #expect(fused == general)
            #expect(portable == general)
            #expect(try client.decrypt(replies: fused, keyword: keyword, secretKey: sk) == expected)
        }
        // A batch (one database pass for every query, each query's selectors read from its own expansion buffer)
        // answers each query as it is answered alone.
        server.fusedPipeline = true
        let queries = try asked.map { try client.generateQuery(keyword: $0.0, secretKey: sk).query }
        let batch = try server.computeResponses(queries: queries.map { ($0, shard.parameters.batchSize, key) })
        #expect(batch.count == queries.count)
        for (i, query) in queries.enumerated() {
            #expect(batch[i] == (try server.computeResponse(query: query, pirCalls: shard.parameters.batchSize, evaluationKey: key)))
            #expect(try client.decrypt(replies: batch[i], keyword: asked[i].0, secretKey: sk) == asked[i].1)
        }
    }

    @Test("expansion in evaluation form equals the coefficient-form expansion transformed", arguments: KeyCompression.allCases)
    func evaluationFormExpansion(compression: KeyCompression) throws {
        let context = try Context(preset: .n_4096_logq_27_28_28_logt_5)
        let kernel = try #require(context.narrowKeySwitch)
        let sk = SecretKey(context: context)
        let count = 37
        let elements = MulPirParameters.galoisElements(expandedCount: count, degree: context.degree, compression: compression)
        let key = try EvaluationKey(config: EvaluationKeyConfig(galoisElements: elements, hasRelinearizationKey: false),
                                    secretKey: sk)
        var rng = TestRandom()
        let values = (0..<context.degree).map { _ in UInt64.random(in: 0..<context.plaintextModulus.value, using: &rng) }
        let ct = try context.encrypt(context.encodeCoefficients(values), secretKey: sk)
        for threads in [1, 2] {
            let expansion = QueryExpansion(context: context, evaluationKey: key, threads: threads)
            let coeff = try #require(try expansion.expandWords(ct, count: count))
            let eval = try #require(try expansion.expandWords(ct, count: count, evaluationForm: true))
            #expect(eval.count == count)
            for (c, e) in zip(coeff, eval) {
                var t = c
                t.withUnsafeMutableBufferPointer { kernel.forwardNTT($0.baseAddress!) }
                #expect(t == e, "\(compression), \(threads) threads")
            }
        }
    }

    /// A query's first-dimension columns written over its own row selectors: the words must be the ones the columns
    /// buffer gets, and the selectors the pass does not overwrite must be left as they were.
    @Test("Each column lands over its row selector word for word, for one query and a batch, on 1 and 2 threads")
    func columnsMatchBuffer() throws {
        var rng = TestRandom()
        let numbers = ProcessingRoundTripTests.phoneNumbers(8_000, using: &rng)
        // 128-byte values: more than four columns per call (two kernel groups), fewer than the rows.
        let rows = numbers.map { (keyword: Array($0.utf8), value: (0..<128).map { _ in UInt8.random(in: 0...255, using: &rng) }) }
        let options = ProcessingOptions(encryption: EncryptionParameters(.n_4096_logq_27_28_28_logt_5))
        let context = try Context(parameters: options.encryption)
        let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: 1, sharding: .sha256)[0]
        let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: options, maxValueLength: 128,
                                                         context: context)
        let p = shard.parameters
        let (d0, d1) = (p.dimensions[0], p.dimensions[1])
        print("dimensions \(p.dimensions), \(p.batchSize) calls, \(p.chunkCount) chunk(s)")
        let server = try MulPirServer(context: context, database: shard.database, threads: 1)
        guard case .narrow(let matrix) = server.tables[0] else { Issue.record("no 32-bit matrix"); return }
        let half = context.ciphertextContext.rowCount * context.degree
        let moduli = context.ciphertextContext.moduli.map { UInt32($0.value) }
        for threads in [1, 2] {
            let first = FirstDimension(context: context, parameters: p, threads: threads)
            #expect(first.columnsFitOverSelectors() && d1 > 4 && d1 < d0)
            for batch in [1, 3] {
                // Random reduced selector words for `batch` queries, each with selectors for two calls' rows.
                let leaves = 2 * d0 + 1
                let queries = try (0..<batch).map { _ in try SelectorWords(count: leaves, leafWords: 2 * half) }
                for words in queries {
                    for k in 0..<leaves {
                        let leaf = words.leaf(k)
                        for i in 0..<(2 * half) { leaf[i] = UInt32.random(in: 0..<moduli[(i % half) / context.degree], using: &rng) }
                    }
                }
                let before = queries.map { w in (0..<leaves).map { w.words($0) } }
                // Call j's row selectors start at leaf j · d0.
                let pairs = queries.flatMap { w in [(w, 0), (w, d0)] }
                let scan = try ScanSelectors(pairs.map { ($0.0, $0.1) }, rows: d0, half: half)
                let buffer = try first.computeWords(selectors: scan, matrix: matrix, chunk: 0)
                try first.computeOverSelectors(selectors: scan, matrix: matrix, chunk: 0)
                for (k, (words, firstLeaf)) in pairs.enumerated() {
                    for c in 0..<d1 {
                        #expect(words.words(firstLeaf + c) == Array(buffer[k][c]), "\(threads) threads, batch \(batch), pair \(k), column \(c)")
                    }
                }
                // The rest of each query's leaves are untouched: the rows past d1 and the leaf no pass reads.
                for (q, words) in queries.enumerated() {
                    for k in 0..<leaves where !(k < d1 || (k >= d0 && k < d0 + d1)) {
                        #expect(words.words(k) == before[q][k], "leaf \(k) of query \(q) changed")
                    }
                }
            }
        }
    }
}
