import ArgumentParser
import AsyncHTTPClient
import BFV
import Foundation
import Logging
import LookupClient
import NIOCore
import PIR

/// `callveil-bench upload-memory`: the service as `serve` runs it (one embedded worker, the tuned allocator, no idle
/// release) on a small dataset, and what large request bodies take of its malloc heap. First one `/queries` body of
/// `--body-kilobytes` that does not parse (it is collected whole and refused at its first byte), then `--phones` key
/// uploads at once, prepared before the measurement. Prints, as JSON, the heap's bytes in use before each and at its
/// peak (sampled every millisecond), and one upload's size. A process of its own, so nothing else moves the heap.
struct UploadMemoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload-memory",
        abstract: "Measure the malloc heap large request bodies and a burst of key uploads take in the tuned service (JSON).",
        shouldDisplay: false)

    @Option(help: "Key uploads sent at once, each from a phone of its own.") var phones = 8
    @Option(help: "Size of the malformed /queries body, KiB.") var bodyKilobytes = 8192
    @Option(help: "Working directory (the dataset and the server's state); default: a new temporary one.") var directory: String?

    func run() async throws {
        MulPirServer.tuneAllocator()  // as `callveil` does before anything else
        MulPirServer.setIdleRelease(milliseconds: 0)
        let directory = self.directory ?? NSTemporaryDirectory() + "callveil-upload-memory-\(getpid())"
        defer { if self.directory == nil { try? FileManager.default.removeItem(atPath: directory) } }
        let dataset = try BenchDataset.prepare(directory: directory, rows: 200, identitySize: 0, blockShards: 1, identityShards: 1,
                                               preset: ParameterPreset.n_4096_logq_27_28_28_logt_5.rawValue, corrupt: false,
                                               reuse: false, seed: 1)
        var logger = Logger(label: "upload-memory")
        logger.logLevel = .warning
        let server = try await BenchServer.start(dataset: dataset, workers: 1, privacyPass: false, logger: logger)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let device = LookupDevice(http: LookupHTTPClient(baseURL: server.url, client: client), authorization: NoAuthorization())
            try await device.syncConfig([BenchDataset.block])  // one upload first: the code's own first allocations
            let userAgent = await device.userAgent
            /// One POST of `body` from `user`; its status.
            @Sendable func post(_ path: String, _ body: ByteBuffer, user: String) async throws -> UInt {
                var request = HTTPClientRequest(url: server.url + path)
                request.method = .POST
                request.headers.add(name: "User-Identifier", value: user)
                request.headers.add(name: "User-Agent", value: userAgent)
                request.body = .bytes(body)
                let response = try await client.execute(request, timeout: .seconds(120))
                _ = try await response.body.collect(upTo: 1 << 20)
                return response.status.code
            }
            // Field number 0 is invalid: the parse fails at the first byte, so all the heap sees is the body's copies.
            let junk = ByteBuffer(repeating: 0, count: bodyKilobytes << 10)
            let (bodyBefore, bodyPeak, bodyStatus) = try await Self.heapPeak { try await post("/queries", junk, user: "upload-memory-junk") }
            guard bodyStatus == 400 else { throw ValidationError("the malformed body was answered \(bodyStatus), not 400") }
            var uploads: [ByteBuffer] = []
            for _ in 0..<phones { uploads.append(ByteBuffer(bytes: try await device.freshKeyUpload(for: BenchDataset.block))) }
            let (uploadBefore, uploadPeak, _) = try await Self.heapPeak {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (i, body) in uploads.enumerated() {
                        group.addTask {
                            let status = try await post("/key", body, user: "upload-memory-\(i)")
                            guard status == 200 else { throw ValidationError("/key answered \(status)") }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            print("{\"bodyBytes\":\(junk.readableBytes),\"bodyBefore\":\(bodyBefore),\"bodyPeak\":\(bodyPeak),"
                  + "\"phones\":\(phones),\"uploadBytes\":\(uploads[0].readableBytes),\"uploadBefore\":\(uploadBefore),"
                  + "\"uploadPeak\":\(uploadPeak)}")
        } catch {
            try? await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }

    /// The heap's bytes in use before `work`, the most in use while it ran (sampled every millisecond), and its result.
    private static func heapPeak<T: Sendable>(_ work: () async throws -> T) async throws -> (before: Int, peak: Int, result: T) {
        let before = MulPirServer.heapInUseBytes
        let sampler = PeakSampler(every: 0.001) { MulPirServer.heapInUseBytes }
        sampler.start()
        defer { sampler.stop() }
        let result = try await work()
        return (before, sampler.peak, result)
    }
}
