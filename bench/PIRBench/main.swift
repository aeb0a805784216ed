// Release-build benchmark of the keyword-PIR server core. It builds one shard (block: 1-byte values; identity:
// values of --value-bytes) from a seeded generator, then for every thread count and batch size answers random
// queries, decrypts every answer (a wrong one aborts the run), and prints one markdown row per configuration,
// plus the machine's memory read bandwidth measured in the same run.
//
//   PIRBench [--rows N] [--value-bytes B] [--queries Q] [--threads 1,2] [--batches 1,8] [--bandwidth]
//            [--seed S] [--rows-out FILE] [--rows-in FILE] [--key-compression none|hybrid|maximum]
//            [--server-loop N] [--interleave] [--query-keep-ms MS]
//
// --rows-out writes the shard's rows (`RowsFile`) and exits, so both this and another implementation can answer
// the same shard; --rows-in reads them instead of generating. --server-loop answers one query N times and prints only the
// server's time (for perf and callgrind). --interleave speaks the line protocol of `bench/interleave.py`.
// --query-keep-ms sets how long a query's selector mapping stays for the next one (`setQueryMappingGrace`; 0: the
// policy that unmaps it as the query ends), to compare the two in one build.
import BFV
import Dispatch
import Foundation
import LookupProtocol
import PIR

struct Options {
    var rows = 10_000
    var valueBytes = 1
    var queries = 5
    var threads = [1]
    var batches = [1]
    var bandwidth = false
    var seed = UInt64.random(in: 1...UInt64(UInt32.max))
    var rowsIn: String?
    var rowsOut: String?
    var keyCompression = KeyCompression.none
    var serverLoop = 0
    var interleave = false
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("PIRBench: \(message)\n".utf8))
    exit(2)
}

var options = Options()
var args = CommandLine.arguments.dropFirst().makeIterator()
while let flag = args.next() {
    if flag == "--bandwidth" { options.bandwidth = true; continue }
    if flag == "--interleave" { options.interleave = true; continue }
    guard let value = args.next() else { fail("\(flag) needs a value") }
    let list = value.split(separator: ",").compactMap { Int($0) }
    switch flag {
    case "--rows": options.rows = list.first ?? options.rows
    case "--value-bytes": options.valueBytes = list.first ?? options.valueBytes
    case "--queries": options.queries = list.first ?? options.queries
    case "--threads": options.threads = list
    case "--batches": options.batches = list
    case "--seed":
        guard let seed = UInt64(value) else { fail("bad seed \(value)") }
        options.seed = seed
    case "--rows-in": options.rowsIn = value
    case "--rows-out": options.rowsOut = value
    case "--server-loop": options.serverLoop = list.first ?? 0
    case "--query-keep-ms":
        guard let ms = list.first, ms >= 0 else { fail("--query-keep-ms takes milliseconds") }
        MulPirServer.setQueryMappingGrace(milliseconds: ms)
    case "--key-compression":
        guard let compression = KeyCompression(rawValue: value) else { fail("key compression none|hybrid|maximum") }
        options.keyCompression = compression
    default: fail("unknown option \(flag)")
    }
}

/// A protocol line, unbuffered.
func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
func fixed(_ x: Double, _ digits: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    return String(Double((x * scale).rounded()) / scale)
}

/// Read bandwidth in GB/s over a buffer much larger than the caches, with `threads` readers.
func memoryBandwidth(threads: Int) -> Double {
    let count = 1 << 26  // 512 MiB of UInt64
    let buffer = UnsafeMutablePointer<UInt64>.allocate(capacity: count)
    defer { buffer.deallocate() }
    for i in 0..<count { buffer[i] = UInt64(i) }
    struct Shared: @unchecked Sendable { let p: UnsafeMutablePointer<UInt64> }
    let shared = Shared(p: buffer)
    var best = 0.0
    for _ in 0..<3 {
        let start = now()
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            let chunk = count / threads
            var sum: UInt64 = 0
            let p = shared.p.advanced(by: t * chunk)
            for i in 0..<chunk { sum &+= p[i] }
            if sum == 42 { print("") }
        }
        best = max(best, Double(count * 8) / (now() - start) / 1e9)
    }
    return best
}

if options.bandwidth {
    print("memory read bandwidth: \(fixed(memoryBandwidth(threads: 1))) GB/s (1 thread), "
        + "\(fixed(memoryBandwidth(threads: 2))) GB/s (2 threads)")
}

// The shard: generated from the seed (random E.164 numbers, random values), or read from a rows file.
var rng = SplitMix64(seed: options.seed)
var rows: [(keyword: [UInt8], value: [UInt8])]
if let path = options.rowsIn {
    do { rows = try RowsFile.read(path: path) } catch { fail("\(path): \(error)") }
    options.rows = rows.count
    options.valueBytes = rows.map(\.value.count).max() ?? 1
} else {
    rows = RowsFile.generate(count: options.rows, valueBytes: options.valueBytes, seed: options.seed)
}
if let path = options.rowsOut {
    // Writing the shard is all: the run that answers it reads the file back with --rows-in.
    do { try RowsFile.write(rows, path: path) } catch { fail("\(path): \(error)") }
    exit(0)
}
let parameters = EncryptionParameters(.n_4096_logq_27_28_28_logt_5)
let context = try Context(parameters: parameters)
var t0 = now()
var processing = ProcessingOptions(encryption: parameters)
processing.keyCompression = options.keyCompression
let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: 1, sharding: .sha256)[0]
let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: processing,
                                                 maxValueLength: options.valueBytes, context: context)
let p = shard.parameters
let processingSeconds = now() - t0
let kind = options.valueBytes == 1 ? "block" : "identity (\(options.valueBytes) B)"

let sk = SecretKey(context: context)
let key = try EvaluationKey(config: shard.evaluationKeyConfig, secretKey: sk)
let keyBytes = try ProtoEvaluationKey(key.serialize()).serializedData().count
let client = try KeywordPirClient(context: context, shards: [p], sharding: .sha256)

/// The next query's keyword and expected value: every fourth asks for an absent number.
var queryCounter = 0
@MainActor func nextKeyword() -> (keyword: [UInt8], value: [UInt8]?) {
    defer { queryCounter += 1 }
    if queryCounter % 4 == 3 { return (Array("+10000000000".utf8), nil) }
    let row = rows[Int(rng.next() % UInt64(rows.count))]
    return (row.keyword, row.value)
}

/// Answers `batch` fresh queries on `server`, decrypting and checking each; the server's time and its split.
@MainActor func answer(server: MulPirServer, batch: Int) throws -> (total: Double, timings: ServerTimings) {
    let keywords = (0..<batch).map { _ in nextKeyword() }
    let queries = try keywords.map { try client.generateQuery(keyword: $0.keyword, secretKey: sk).query }
    var timings = ServerTimings()
    let start = now()
    let responses = try server.computeResponses(queries: queries.map { ($0, p.batchSize, key) }, timings: &timings)
    let elapsed = now() - start
    for (k, response) in responses.enumerated() {
        let value = try client.decrypt(replies: response, keyword: keywords[k].keyword, secretKey: sk)
        guard value == keywords[k].value else {
            print("WRONG ANSWER for query \(k) of batch \(batch)")
            throw PIRError.invalidQuery("decryption mismatch")
        }
    }
    return (elapsed, timings)
}

var servers: [Int: MulPirServer] = [:]
@MainActor func server(threads: Int) throws -> MulPirServer {
    if let s = servers[threads] { return s }
    let s = try MulPirServer(context: context, database: shard.database, threads: threads)
    servers[threads] = s
    return s
}

if options.serverLoop > 0 {
    // One query answered again and again: the server's work only, for profilers.
    let keyword = nextKeyword()
    let query = try client.generateQuery(keyword: keyword.keyword, secretKey: sk).query
    let s = try server(threads: options.threads.first ?? 1)
    var timings = ServerTimings()
    t0 = now()
    var last: [[[Ciphertext]]] = []
    for _ in 0..<options.serverLoop {
        last = try s.computeResponses(queries: [(query, p.batchSize, key)], timings: &timings)
    }
    let elapsed = now() - t0
    guard try client.decrypt(replies: last[0], keyword: keyword.keyword, secretKey: sk) == keyword.value else {
        fail("WRONG ANSWER in the server loop")
    }
    let n = Double(options.serverLoop)
    print("server loop: \(options.serverLoop) queries, \(fixed(elapsed / n * 1000, 2)) ms each "
        + "(expansion \(fixed(timings.expansion / n * 1000, 2)), scan \(fixed(timings.firstDimension / n * 1000, 2)), "
        + "2nd dim \(fixed(timings.secondDimension / n * 1000, 2)))")
    exit(0)
}

if options.interleave {
    // Line protocol of bench/interleave.py: announce readiness, then answer `run <threads> <queries>` lines.
    emit("ready impl=callveil rows=\(rows.count) dims=\(p.dimensions.map(String.init).joined(separator: "x")) entry=\(p.entrySize) keybytes=\(keyBytes) "
        + "processing_s=\(fixed(processingSeconds, 2))")
    while let line = readLine() {
        let words = line.split(separator: " ")
        guard words.first == "run", words.count == 3, let threads = Int(words[1]), let count = Int(words[2]),
              threads >= 1, count >= 1 else { break }
        let s = try server(threads: threads)
        var samples: [(total: Double, timings: ServerTimings)] = []
        for _ in 0..<count { samples.append(try answer(server: s, batch: 1)) }
        samples.sort { $0.total < $1.total }
        let median = samples[samples.count / 2]
        let ms = samples.map { $0.total * 1000 }
        emit("result threads=\(threads) n=\(count) checked=\(count) median_ms=\(fixed(median.total * 1000, 2)) "
            + "min_ms=\(fixed(ms[0], 2)) max_ms=\(fixed(ms[ms.count - 1], 2)) "
            + "expansion_ms=\(fixed(median.timings.expansion * 1000, 2)) "
            + "scan_ms=\(fixed(median.timings.firstDimension * 1000, 2)) "
            + "second_ms=\(fixed(median.timings.secondDimension * 1000, 2))")
        }
    exit(0)
}

print("\(kind), \(options.rows) rows (seed \(options.seed)): dimensions \(p.dimensions), entry size \(p.entrySize), "
    + "processing \(fixed(processingSeconds, 2)) s, evaluation key \(keyBytes) bytes (\(key.galoisKeys.count) Galois keys, \(options.keyCompression.rawValue))")
print("")
print("| shard | threads | batch | ms per query | min ms per query | queries/s | expansion ms | scan ms | 2nd dim ms | scan GB/s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

for threads in options.threads {
    let s = try server(threads: threads)
    for batch in options.batches {
        var samples: [(total: Double, timings: ServerTimings)] = []
        for q in 0..<(options.queries + 1) {
            let sample = try answer(server: s, batch: batch)
            if q > 0 { samples.append(sample) }
        }
        samples.sort { $0.total < $1.total }
        let median = samples[samples.count / 2]
        let perQuery = median.total / Double(batch)
        let t = median.timings
        let fastest = samples[0].total / Double(batch)
        print("| \(kind) \(options.rows) | \(threads) | \(batch) | \(fixed(perQuery * 1000)) | \(fixed(fastest * 1000)) | "
            + "\(fixed(1 / perQuery)) | "
            + "\(fixed(t.expansion * 1000)) | \(fixed(t.firstDimension * 1000)) | \(fixed(t.secondDimension * 1000)) | "
            + "\(fixed(Double(t.scannedBytes) / t.firstDimension / 1e9, 2)) |")
    }
}
