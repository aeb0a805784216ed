// Release-build benchmark of the keyword-PIR server core. It builds one shard (block: 1-byte values; identity:
// values of --value-bytes), then for every thread count and batch size answers random queries, decrypts every
// answer (a wrong one aborts the run), and prints one markdown row per configuration, plus the machine's
// memory read bandwidth measured in the same run.
//   PIRBench [--rows N] [--value-bytes B] [--queries Q] [--threads 1,2] [--batches 1,8]
import BFV
import Dispatch
import PIR

struct Options {
    var rows = 10_000
    var valueBytes = 1
    var queries = 5
    var threads = [1]
    var batches = [1]
    var bandwidth = false
}

var options = Options()
var args = CommandLine.arguments.dropFirst().makeIterator()
while let flag = args.next() {
    if flag == "--bandwidth" { options.bandwidth = true; continue }
    let value = args.next() ?? ""
    let list = value.split(separator: ",").compactMap { Int($0) }
    switch flag {
    case "--rows": options.rows = list.first ?? options.rows
    case "--value-bytes": options.valueBytes = list.first ?? options.valueBytes
    case "--queries": options.queries = list.first ?? options.queries
    case "--threads": options.threads = list
    case "--batches": options.batches = list
    default: print("unknown option \(flag)")
    }
}

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

var rng = SystemRandomNumberGenerator()
let parameters = EncryptionParameters(.n_4096_logq_27_28_28_logt_5)
let context = try Context(parameters: parameters)
var rows: [(keyword: [UInt8], value: [UInt8])] = []
rows.reserveCapacity(options.rows)
var seen = Set<UInt64>()
while rows.count < options.rows {
    let number = UInt64.random(in: 2_000_000_000...9_999_999_999, using: &rng)
    guard seen.insert(number).inserted else { continue }
    rows.append((Array(("+1" + String(number)).utf8), (0..<options.valueBytes).map { _ in UInt8.random(in: 0...255, using: &rng) }))
}
var t0 = now()
let processing = ProcessingOptions(encryption: parameters)
let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: 1, sharding: .sha256)[0]
let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: processing,
                                                 maxValueLength: options.valueBytes, context: context)
let p = shard.parameters
let kind = options.valueBytes == 1 ? "block" : "identity (\(options.valueBytes) B)"
print("\(kind), \(options.rows) rows: dimensions \(p.dimensions), entry size \(p.entrySize), "
    + "processing \(fixed(now() - t0, 2)) s")
print("")
print("| shard | threads | batch | ms per query | min ms per query | queries/s | expansion ms | scan ms | 2nd dim ms | scan GB/s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

let sk = SecretKey(context: context)
let key = try EvaluationKey(config: shard.evaluationKeyConfig, secretKey: sk)
let client = try KeywordPirClient(context: context, shards: [p], sharding: .sha256)
for threads in options.threads {
    let server = try MulPirServer(context: context, database: shard.database, threads: threads)
    for batch in options.batches {
        var samples: [(total: Double, timings: ServerTimings)] = []
        for q in 0..<(options.queries + 1) {
            let keywords = (0..<batch).map { i -> (keyword: [UInt8], value: [UInt8]?) in
                // Every fourth query asks for an absent number.
                if i % 4 == 3 { return (Array("+10000000000".utf8), nil) }
                let row = rows[Int.random(in: 0..<rows.count, using: &rng)]
                return (row.keyword, row.value)
            }
            let queries = try keywords.map { try client.generateQuery(keyword: $0.keyword, secretKey: sk).query }
            var timings = ServerTimings()
            t0 = now()
            let responses = try server.computeResponses(queries: queries.map { ($0, p.batchSize, key) }, timings: &timings)
            let elapsed = now() - t0
            for (k, response) in responses.enumerated() {
                let value = try client.decrypt(replies: response, keyword: keywords[k].keyword, secretKey: sk)
                guard value == keywords[k].value else {
                    print("WRONG ANSWER for query \(k) of batch \(batch)")
                    throw PIRError.invalidQuery("decryption mismatch")
                }
            }
            if q > 0 { samples.append((elapsed, timings)) }
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
