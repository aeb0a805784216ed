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
}
