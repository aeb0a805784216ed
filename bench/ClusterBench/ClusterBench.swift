// Cluster benchmark: coordinator overhead per query against the in-process path, queries/s with 1 and 2
// workers, shard transfer rate and the LZ4 ratio of the compact form. Release build: bench/run-cluster-bench.sh.
import BFV
import ClusterTransport
import Dataset
import Foundation
import LZ4
import Logging
import LookupCoordinator
import LookupEngine
import LookupProtocol
import LookupStorage
import LookupWorker
import PIR
import ZeroMQ

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
}
func ms(_ s: Double) -> String { String(format: "%.3f ms", s * 1000) }

@main
struct ClusterBench {
    static func main() async throws {
        let rows = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 100_000
        let shardCount = 2
        let queriesPerRun = 20
        var log = Logger(label: "bench")
        log.logLevel = .error
        let logger = log
        let directory = NSTemporaryDirectory() + "callveil-cluster-bench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // Dataset: `rows` block rows in `shardCount` shards.
        var keywordRows: [(keyword: [UInt8], value: [UInt8])] = []
        for i in 0..<rows { keywordRows.append((Array("+1\(2_000_000_000 + i * 7)".utf8), [UInt8(i % 7 == 0 ? 1 : 0)])) }
        let encryption = EncryptionParameters(.n_4096_logq_27_28_28_logt_5)
        let options = ProcessingOptions(encryption: encryption, shardCount: shardCount, sharding: .sha256)
        let t0 = now()
        try DatabaseProcessingJob(options: options, outputStem: "\(directory)/block/shard").run(rows: keywordRows)
        print("processed \(rows) rows into \(shardCount) shards in \(String(format: "%.1f", now() - t0)) s")
        let loaded = try UseCaseLoader.load(name: "bench.block", fileStem: "\(directory)/block/shard", shardCount: nil, manifest: nil)
        let configuration = loaded.version.configuration
        let context = loaded.version.context

        // Device side: a key and queries for random present keywords.
        let store = try SQLiteEvaluationKeyStore(path: "\(directory)/keys.sqlite")
        let secretKey = SecretKey(context: context)
        let evaluationKey = try EvaluationKey(config: configuration.keyConfig.native(), secretKey: secretKey)
        let serializedKey: [UInt8] = try ProtoEvaluationKey(evaluationKey.serialize()).serializedBytes()
        _ = try await store.store(StoredEvaluationKey(user: "bench", identifier: configuration.keyConfigHash, timestamp: 1, uploadedAt: Date(),
                                                  serialized: serializedKey))
        let client = try KeywordPirClient(context: context, shards: configuration.shards, sharding: configuration.sharding)
        var built: [(ShardQuery, [UInt8])] = []
        for i in 0..<queriesPerRun {
            let keyword = keywordRows[(i * 7919) % rows].keyword
            let (shard, query) = try client.generateQuery(keyword: keyword, secretKey: secretKey)
            built.append((ShardQuery(useCase: loaded.version.name, configID: configuration.configID, shardIndex: shard,
                                       query: ProtoEncryptedIndices(query, pirCalls: configuration.shards[shard].batchSize),
                                       key: .stored(user: "bench", identifier: configuration.keyConfigHash, timestamp: 1)), keyword))
        }

        let queries = built

        func latencies(_ executor: any ShardExecutor) async throws -> [Double] {
            _ = try await executor.execute(queries[0].0)  // warm the key cache
            var out: [Double] = []
            for (query, keyword) in queries {
                let start = now()
                let response = try await executor.execute(query)
                out.append(now() - start)
                let value = try client.decrypt(replies: try response.native(context: context), keyword: keyword, secretKey: secretKey)
                precondition(value != nil, "wrong answer")
            }
            return out
        }

        /// Latencies of `a` and `b` measured alternately, query by query, so drift (frequency, caches) hits both alike.
        func pairedLatencies(_ a: any ShardExecutor, _ b: any ShardExecutor, passes: Int = 3) async throws -> ([Double], [Double]) {
            _ = try await a.execute(queries[0].0)
            _ = try await b.execute(queries[0].0)
            var outA: [Double] = [], outB: [Double] = []
            for _ in 0..<passes {
                for (query, _) in queries {
                    var start = now()
                    _ = try await a.execute(query)
                    outA.append(now() - start)
                    start = now()
                    _ = try await b.execute(query)
                    outB.append(now() - start)
                }
            }
            return (outA, outB)
        }

        func throughput(_ executor: any ShardExecutor, inFlight: Int) async throws -> Double {
            let start = now()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<inFlight {
                    group.addTask {
                        for i in stride(from: lane, to: queries.count, by: inFlight) { _ = try await executor.execute(queries[i].0) }
                    }
                }
                try await group.waitForAll()
            }
            return Double(queries.count) / (now() - start)
        }

        // 1. In-process.
        let local = LocalShardExecutor(keyStore: store, cache: EvaluationKeyCache(capacity: 1 << 30), pool: ComputePool(width: 2))
        try await local.install(loaded)
        _ = try await latencies(local)  // checks every answer decrypts
        let localQPS = try await throughput(local, inFlight: 4)

        // 2. Coordinator + workers over TCP loopback with CURVE.
        let zmq = try ZMQContext()
        let serverKeys = try CurveKeyPair.generate()
        let workerKeys = [try CurveKeyPair.generate(), try CurveKeyPair.generate()]
        var coordinatorOptions = ClusterCoordinator.Options(bind: "tcp://127.0.0.1:0")
        coordinatorOptions.replication = 2
        coordinatorOptions.curve = (serverKeys, ["w0": workerKeys[0].publicKey, "w1": workerKeys[1].publicKey].reduce(into: [:]) { $0[$1.value] = $1.key })
        let coordinator = try ClusterCoordinator(context: zmq, options: coordinatorOptions, keyStore: store, logger: logger)
        let installStart = now()
        try await coordinator.install(loaded)
        let compactSeconds = now() - installStart
        func startWorker(_ i: Int, threads: Int) throws -> ClusterWorker {
            var o = ClusterWorker.Options(coordinator: coordinator.endpoint, dataDirectory: "\(directory)/w\(i)", workerID: "w\(i)")
            o.threads = threads
            o.curve = (workerKeys[i], [serverKeys.publicKey])
            return try ClusterWorker(context: zmq, options: o, logger: logger)
        }
        let transferStart = now()
        let first = try startWorker(0, threads: MulPirServer.coreCount)
        guard await coordinator.waitUntilPlaced(copies: 1, timeout: .seconds(600)) else { fatalError("placement timed out") }
        let transferSeconds = now() - transferStart
        _ = try await latencies(coordinator)  // checks every answer decrypts
        let (localLatency, clusterLatency1) = try await pairedLatencies(local, coordinator)
        let clusterQPS1 = try await throughput(coordinator, inFlight: 4)
        let second = try startWorker(1, threads: max(MulPirServer.coreCount / 2, 1))
        guard await coordinator.waitUntilPlaced(copies: 2, timeout: .seconds(600)) else { fatalError("placement timed out") }
        let clusterQPS2 = try await throughput(coordinator, inFlight: 4)

        // Transfer sizes and LZ4 ratios: the shard file (what travels) vs the evaluation form.
        var compactBytes = 0, compactLZ4 = 0, evalBytes = 0, evalLZ4 = 0
        for source in loaded.shards {
            let database = try source.load()
            let compact = try source.shardFile(parameterBlob: [], context: context).bytes
            compactBytes += compact.count
            compactLZ4 += try LZ4Frame.compress(compact).count
            let eval = database.serializeReferenceFormat()
            evalBytes += eval.count
            evalLZ4 += try LZ4Frame.compress(eval).count
        }
        second.stop()
        first.stop()
        coordinator.shutdown()

        let overhead = percentile(clusterLatency1, 0.5) - percentile(localLatency, 0.5)
        print("""
        latency: \(localLatency.count) queries per path, the two paths measured alternately
        | path | p50 | p90 | queries/s (4 in flight) |
        |---|---|---|---|
        | in-process executor | \(ms(percentile(localLatency, 0.5))) | \(ms(percentile(localLatency, 0.9))) | \(String(format: "%.1f", localQPS)) |
        | coordinator + 1 worker (TCP, CURVE) | \(ms(percentile(clusterLatency1, 0.5))) | \(ms(percentile(clusterLatency1, 0.9))) | \(String(format: "%.1f", clusterQPS1)) |
        | coordinator + 2 workers (TCP, CURVE, same 2-core host) | | | \(String(format: "%.1f", clusterQPS2)) |

        coordinator overhead at p50: \(ms(overhead))
        shard transfer to a new worker (compact form, LZ4 chunks, rebuild to NTT form): \(compactBytes) bytes in \(String(format: "%.2f", transferSeconds)) s = \(String(format: "%.1f", Double(compactBytes) / transferSeconds / 1e6)) MB/s (compact encoding at the coordinator: \(String(format: "%.2f", compactSeconds)) s)
        LZ4 ratio (compressed/original): compact form \(String(format: "%.3f", Double(compactLZ4) / Double(compactBytes))), evaluation form \(String(format: "%.3f", Double(evalLZ4) / Double(evalBytes))); compact form is \(String(format: "%.1f", Double(evalBytes) / Double(compactBytes)))x smaller than the evaluation form
        """)

    }
}
