import ArgumentParser
import BFV
import Foundation
import Hummingbird
import LoadGeneration
import Logging
import LookupClient
import LookupProtocol
import LookupService
import PIR
import ServiceLifecycle
import Synchronization
import ZeroMQ
#if canImport(Glibc)
import Glibc
#endif

/// `callveil-bench bench`: generates a dataset, processes it, starts the service (embedded coordinator and workers)
/// or targets any server with `--url`, drives it with simulated phones, checks every answer, and writes JSON, a
/// markdown table and plots.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Load-test a Live Caller ID Lookup server with simulated phones; every answer is decrypted and checked.",
        discussion: """
        Writes <output>/results.json, <output>/table.md and, with python3 + matplotlib (installed with pip when
        missing), <output>/latency-vs-load.png, throughput-vs-workers.png, throughput-vs-batch.png.
        Exits non-zero when any answer is wrong or any request fails.
        """)

    @Option(help: "Numbers in the dataset.") var rows = 20_000
    @Option(help: "Size in bytes of each identity value (serialized CallIdentity).") var identitySize = 64
    @Option(help: "Block shards.") var blockShards = 2
    @Option(help: "Identity shards.") var identityShards = 2
    @Option(help: "BFV preset.") var preset = ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue
    @Option(help: "Embedded workers (0: PIR in the HTTP process).") var workers = 1
    @Option(help: "Simulated phones.") var phones = 4
    @Option(help: "closed or open.") var mode = "closed"
    @Option(help: "Open loop: lookups per second.") var rate = 1.0
    @Option(help: "Seconds of load per run.") var duration = 20.0
    @Option(help: "Fraction of lookups for numbers in the dataset.") var presentFraction = 0.8
    @Option(help: "Target this server instead of starting one (it must serve the dataset in --dataset); repeat for several front doors (phone i lives at the i-th modulo their number and uploads its key through the next).") var url: [String] = []
    @Flag(help: "Requests that got no HTTP answer (a front door killed on purpose) do not fail the run; they are still counted, per front door.") var tolerateConnectionErrors = false
    @Option(help: "With --url: the dataset directory (its identities.csv is the truth), written by an earlier run or by generate-demo.") var dataset: String?
    @Option(help: "With --url: a second identities CSV; rows that differ may answer either value (a reload under way).") var acceptEither: String?
    @Option(help: "With --accept-either: once this file exists the reload has converged, and lookups started after must answer the second CSV's value.")
    var convergedMarker: String?
    @Option(help: "Retries of a request answered 503/429 with Retry-After (0: count it as an error).") var retries = 0
    @Option(help: "Seconds between each phone's config syncs (0: only at setup and after a 410).") var configRefresh = 0.0
    @Option(help: "User token for Privacy Pass issuance.") var userToken = "AAAA"
    @Option(help: "Output directory.") var output = "bench/out/latest"
    @Option(help: "none, or all: workers 1 and 2, 1-8 phones in flight, and open-loop rates up to capacity.") var sweep = "none"
    @Flag(help: "Skip the plots (results.json and table.md only).") var noPlots = false
    @Flag(help: "Serve wrong block values (the truth is kept): the run must fail.") var corrupt = false
    @Option(help: "Random seed.") var seed: UInt64 = 1
    @Option(help: "MiB of parsed evaluation keys the embedded service caches (keys.cacheMegabytes; default 512).") var keyCacheMegabytes: Int?

    func run() async throws {
        var logger = Logger(label: "callveil-bench")
        logger.logLevel = .error
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let data = try BenchDataset.prepare(directory: dataset ?? "\(output)/dataset", rows: rows, identitySize: identitySize,
                                            blockShards: blockShards, identityShards: identityShards, preset: preset,
                                            corrupt: corrupt, reuse: !url.isEmpty, seed: seed,
                                            acceptEither: acceptEither, convergedMarker: convergedMarker)
        var runs: [BenchRun] = []
        func measure(label: String, workers: Int, phones: Int, mode: LoadGenerator.Mode) async throws -> BenchRun {
            let server = url.isEmpty ? try await BenchServer.start(dataset: data, workers: workers, keyCacheMegabytes: keyCacheMegabytes, logger: logger) : nil
            defer { if let server { Task { await server.stop() } } }
            let targets = server.map { [$0.url] } ?? url
            let snapshot = CPUSnapshot()
            let generator = LoadGenerator(urls: targets, blockUseCase: BenchDataset.block, identityUseCase: BenchDataset.identity,
                                          phones: phones, userToken: userToken, presentFraction: presentFraction,
                                          retry: .init(retries: retries, configRefreshSeconds: configRefresh > 0 ? configRefresh : nil))
            let result = try await generator.run(mode: mode, duration: .milliseconds(Int(duration * 1000)), truth: data.truth, seed: seed,
                                                 measuring: { snapshot.take(compute: server?.pirComputeSeconds() ?? 0, keyCache: server?.keyCache()) }) {
                writeStderr("\r\(label): \($0)   ")
            }
            let (cpuBefore, computeBefore) = snapshot.values
            writeStderr("\n")
            if let server, let before = snapshot.keyCache {
                let after = server.keyCache()
                let (hits, misses) = (after.hits - before.hits, after.misses - before.misses)
                print(String(format: "%@: key cache %d hits, %d misses (hit rate %.1f%%), fetch and parse per miss %.2f ms", label, hits, misses,
                             100 * Double(hits) / Double(max(hits + misses, 1)),
                             1000 * (after.fetchSeconds - before.fetchSeconds) / Double(max(misses, 1))))
            }
            let run = BenchRun(label: label, workers: url.isEmpty ? workers : nil, phones: phones, mode: mode, result: result,
                               cpuSeconds: url.isEmpty ? processCPUSeconds() - cpuBefore : nil,
                               pirComputeSeconds: server.map { $0.pirComputeSeconds() - computeBefore })
            if let server { await server.stop() }
            return run
        }
        let chosen: LoadGenerator.Mode = mode == "open" ? .open(rate: rate) : .closed
        if sweep == "all" {
            for w in [1, 2] { runs.append(try await measure(label: "workers=\(w)", workers: w, phones: 4, mode: .closed)) }
            for p in [1, 2, 4, 8] { runs.append(try await measure(label: "phones=\(p)", workers: workers, phones: p, mode: .closed)) }
            let capacity = runs.first { $0.label == "phones=4" }?.lookupsPerSecond ?? 1
            for fraction in [0.25, 0.5, 0.75, 0.9] {
                let r = capacity * fraction
                runs.append(try await measure(label: String(format: "open %.2f/s", r), workers: workers, phones: 16, mode: .open(rate: r)))
            }
        } else {
            runs.append(try await measure(label: mode == "open" ? String(format: "open %.2f/s", rate) : "closed",
                                          workers: workers, phones: phones, mode: chosen))
        }
        let report = BenchReport(rows: rows, identitySize: identitySize, blockShards: blockShards, identityShards: identityShards,
                                 preset: preset, target: url.isEmpty ? "embedded" : url.joined(separator: " "), cores: MulPirServer.coreCount, runs: runs)
        try report.write(to: output)
        print(report.markdown())
        if !noPlots { BenchReport.plot(output: output) }
        let bad = runs.reduce(0) {
            $0 + $1.result.mismatches + $1.result.errors - (tolerateConnectionErrors ? $1.result.connectionErrors : 0)
        }
        if bad > 0 {
            for run in runs where !run.result.problems.isEmpty { writeStderr("\(run.label): \(run.result.problems.joined(separator: "; "))\n") }
            throw ExitCode(1)
        }
    }
}

/// CPU and PIR-compute readings taken when the measured phase starts (after setup and warm-up).
final class CPUSnapshot: Sendable {
    typealias KeyCache = (hits: Int, misses: Int, fetchSeconds: Double)
    private let state = Mutex<(cpu: Double, compute: Double, keyCache: KeyCache?)>((0, 0, nil))
    func take(compute: Double, keyCache: KeyCache? = nil) { state.withLock { $0 = (processCPUSeconds(), compute, keyCache) } }
    var values: (Double, Double) { state.withLock { ($0.cpu, $0.compute) } }
    /// The key cache's counters when the measured phase started.
    var keyCache: KeyCache? { state.withLock { $0.keyCache } }
}

/// Process CPU time (user + system) so far.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}
