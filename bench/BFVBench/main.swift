// Release-build benchmark of the BFV primitives that decide per-query PIR time, on the Live Caller ID preset
// (N = 4096, moduli 27/28/28 bits). Usage:
//   BFVBench                     time every benchmark (median of repeated runs), one tab-separated line each
//   BFVBench NAME ITERATIONS     run one benchmark ITERATIONS times after set-up (for callgrind counts)
//   BFVBench --list              the benchmark names
import BFV
import Dispatch
import LookupProtocol
import SwiftProtobuf

/// One benchmark: a set-up that returns the operation to repeat, and the bytes one run processes (for MB/s).
struct Benchmark {
    let name: String
    let what: String
    let bytesPerRun: Int
    let setUp: () throws -> () throws -> Void
}

func makeBenchmarks() throws -> [Benchmark] {
    let context = try Context(preset: .n_4096_logq_27_28_28_logt_5)
    let sk = SecretKey(context: context)
    let n = context.degree
    var rng = SystemRandomNumberGenerator()
    let values = (0..<n).map { _ in UInt64.random(in: 0..<17, using: &rng) }
    let ct = try context.encrypt(context.encodeCoefficients(values), secretKey: sk)
    let key = try EvaluationKey(config: EvaluationKeyConfig(galoisElements: [4097], hasRelinearizationKey: true), secretKey: sk)
    let keyPoly = Sampling.liftSigned((0..<n).map { _ in Int64.random(in: -1000...1000, using: &rng) }, context: context.keyContext)
    let accumulateTerms = 64
    let evalCt = ct.converted(to: .eval)
    let plaintexts = try (0..<accumulateTerms).map { _ in
        try context.evalPlaintext(context.encodeCoefficients((0..<n).map { _ in UInt64.random(in: 0..<17, using: &rng) }))
    }
    let queryBytes = try ProtoSerializedCiphertext(ct.serialize()).serializedBytes() as [UInt8]
    let keyBytes = try ProtoEvaluationKey(key.serialize()).deterministicBytes()
    return [
        Benchmark(name: "ntt-forward", what: "forward NTT, 3 moduli × 4096", bytesPerRun: 0) {
            var p = keyPoly
            return { p.format = .coeff; p.forwardNTT() }
        },
        Benchmark(name: "ntt-inverse", what: "inverse NTT, 3 moduli × 4096", bytesPerRun: 0) {
            var p = keyPoly.converted(to: .eval)
            return { p.format = .eval; p.inverseNTT() }
        },
        Benchmark(name: "ct-pt-mac", what: "ct×pt multiply-accumulate, per ciphertext (64-term inner product)", bytesPerRun: 0) {
            let cts = [Ciphertext](repeating: evalCt, count: accumulateTerms)
            return { _ = try context.innerProduct(cts, plaintexts) }
        },
        Benchmark(name: "key-switch", what: "one key switch (applyGalois 4097, 2 moduli + special)", bytesPerRun: 0) {
            { _ = try context.applyGalois(ct, element: 4097, key: key) }
        },
        Benchmark(name: "fused-key-switch", what: "one expansion node's key switch on 32-bit words (CKernels, applyGalois 4097)",
                  bytesPerRun: 0) {
            guard let kernel = context.narrowKeySwitch, let ksk = key.galoisKeys[4097] else {
                throw HEError.invalidParameters("no 32-bit kernel")
            }
            let input = ct.converted(to: .coeff).polys.flatMap { $0.data.map { UInt32($0) } }
            var output = [UInt32](repeating: 0, count: kernel.ciphertextWords)
            let scratch = kernel.makeScratch()
            return {
                try input.withUnsafeBufferPointer { src in
                    try output.withUnsafeMutableBufferPointer { dst in
                        guard let s = src.baseAddress, let d = dst.baseAddress else { return }
                        try kernel.applyGalois(d, s, element: 4097, key: ksk, scratch: scratch)
                    }
                }
            }
        },
        Benchmark(name: "deserialize-query", what: "parse a seeded query ciphertext (protobuf + DRBG + inverse NTT)",
                  bytesPerRun: queryBytes.count) {
            {
                let proto = try ProtoSerializedCiphertext(serializedBytes: queryBytes)
                _ = try Ciphertext(deserialize: try proto.native(), context: context, moduliCount: 2, format: .coeff)
            }
        },
        Benchmark(name: "deserialize-evaluation-key", what: "parse an evaluation key (1 Galois + relin, seeded Eval)",
                  bytesPerRun: keyBytes.count) {
            {
                let proto = try ProtoEvaluationKey(serializedBytes: keyBytes)
                _ = try EvaluationKey(deserialize: try proto.native(), context: context)
            }
        },
        Benchmark(name: "deserialize-evaluation-key-compute", what: "parse the same key straight into the compute form a server caches",
                  bytesPerRun: keyBytes.count) {
            {
                _ = try ProtoEvaluationKey.computeFormKey(serialized: keyBytes, context: context)
            }
        },
    ]
}

/// Divisor that turns one run into "per item" figures.
func itemsPerRun(_ name: String) -> Int { name == "ct-pt-mac" ? 64 : 1 }

func nowNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func formatMicros(_ ns: Double) -> String {
    let us = ns / 1000
    return us >= 100 ? String(Int(us.rounded())) : String(Double(Int(us * 100)) / 100)
}

let arguments = CommandLine.arguments.dropFirst()
let benchmarks = try makeBenchmarks()
if arguments.first == "--list" {
    for b in benchmarks { print(b.name) }
} else if let name = arguments.first {
    guard let b = benchmarks.first(where: { $0.name == name }) else {
        print("unknown benchmark \(name)")
        throw BenchError.unknown(name)
    }
    let iterations = Int(arguments.dropFirst().first ?? "1") ?? 1
    let op = try b.setUp()
    for _ in 0..<iterations { try op() }
} else {
    // One tab-separated line per benchmark: name, description, µs per item (median), MB/s or "-".
    for b in benchmarks {
        let op = try b.setUp()
        try op()
        var samples: [Double] = []
        let start = nowNanos()
        while samples.count < 15 || (nowNanos() - start < 1_000_000_000 && samples.count < 2000) {
            let t0 = nowNanos()
            try op()
            samples.append(Double(nowNanos() - t0))
        }
        samples.sort()
        let median = samples[samples.count / 2] / Double(itemsPerRun(b.name))
        let mbps = b.bytesPerRun > 0 ? String(Int((Double(b.bytesPerRun) / (samples[samples.count / 2] / 1e9) / 1e6).rounded())) : "-"
        print("\(b.name)\t\(b.what)\t\(formatMicros(median))\t\(mbps)")
    }
}

enum BenchError: Error { case unknown(String) }
