// Release-build benchmark of the keyword-PIR server core on a block shard (1-byte values) or an identity shard
// (values of a given size). Usage: PIRBench [--rows N] [--value-bytes B] [--queries Q] [--threads T] [--batch K]
import BFV
import Dispatch
import PIR

struct Options {
    var rows = 10_000
    var valueBytes = 1
    var queries = 5
    var threads = 1
    var batch = 1
}

var options = Options()
var args = CommandLine.arguments.dropFirst().makeIterator()
while let flag = args.next() {
    let value = Int(args.next() ?? "") ?? 0
    switch flag {
    case "--rows": options.rows = value
    case "--value-bytes": options.valueBytes = value
    case "--queries": options.queries = value
    case "--threads": options.threads = value
    case "--batch": options.batch = value
    default: print("unknown option \(flag)")
    }
}

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

var rng = SystemRandomNumberGenerator()
let parameters = EncryptionParameters(.n_4096_logq_27_28_28_logt_5)
let context = try Context(parameters: parameters)
var rows: [(keyword: [UInt8], value: [UInt8])] = []
rows.reserveCapacity(options.rows)
for i in 0..<options.rows {
    let number = "+1" + String(2_000_000_000 + i * 7919 % 7_999_999_999)
    rows.append((Array(number.utf8), (0..<options.valueBytes).map { _ in UInt8.random(in: 0...255, using: &rng) }))
}
var t0 = now()
let processing = ProcessingOptions(encryption: parameters)
let entries = try KeywordDatabaseProcessor.shard(rows: rows, shardCount: 1, sharding: .sha256)[0]
let shard = try KeywordDatabaseProcessor.process(shard: 0, entries: entries, options: processing,
                                                 maxValueLength: options.valueBytes, context: context)
let processSeconds = now() - t0
let p = shard.parameters
print("rows \(options.rows), value bytes \(options.valueBytes): dimensions \(p.dimensions), entry size \(p.entrySize), "
    + "processing \(Int(processSeconds * 1000)) ms")

let server = try MulPirServer(context: context, database: shard.database, threads: options.threads)
let sk = SecretKey(context: context)
let key = try EvaluationKey(config: shard.evaluationKeyConfig, secretKey: sk)
let client = try KeywordPirClient(context: context, shards: [p], sharding: .sha256)
var timings: [Double] = []
for q in 0..<(options.queries + 1) {
    let keywords = (0..<options.batch).map { _ in rows[Int.random(in: 0..<rows.count, using: &rng)] }
    let queries = try keywords.map { try client.generateQuery(keyword: $0.keyword, secretKey: sk).query }
    t0 = now()
    let responses = try server.computeResponses(queries: queries.map { ($0, p.batchSize, key) })
    let elapsed = now() - t0
    if q > 0 { timings.append(elapsed) }
    for (k, response) in responses.enumerated() {
        let value = try client.decrypt(replies: response, keyword: keywords[k].keyword, secretKey: sk)
        guard value == keywords[k].value else {
            print("WRONG ANSWER")
            throw PIRError.invalidQuery("decryption mismatch")
        }
    }
}
timings.sort()
let median = timings[timings.count / 2]
print("threads \(options.threads), batch \(options.batch): \(String(format3(median * 1000))) ms per batch, "
    + "\(String(format3(median * 1000 / Double(options.batch)))) ms per query, "
    + "\(String(format3(Double(options.batch) / median))) queries/s")

func format3(_ x: Double) -> String { String(Double(Int(x * 1000)) / 1000) }
