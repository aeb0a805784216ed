import ArgumentParser
import Foundation

/// `callveil-bench workload upload`: every prepared phone uploads its evaluation key (`/key`, its own
/// User-Identifier and token), as a phone does once before its first lookup. Setup for `replay`, not measured; a
/// 503/429 is retried after its `Retry-After`.
struct WorkloadUploadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "upload", abstract: "Upload every prepared phone's key.")

    @OptionGroup var target: WorkloadTarget
    @Option(help: "Uploads in flight.") var concurrency = 8

    func run() async throws {
        let manifest = try WorkloadManifest.load(target.dir)
        let phones = try WorkloadPhone.load(target.dir)
        var reader = try RecordReader(path: "\(target.dir)/key-bodies.bin")
        var read: [[UInt8]] = []
        while !reader.atEnd { read.append(try reader.field()) }
        let bodies = read
        let transport = try target.transport(manifest)
        let progress = WorkloadProgress(label: "key uploads", total: phones.count)
        let next = NextIndex()
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<max(concurrency, 1) {
                group.addTask {
                    var failed = 0
                    while let i = next.take(below: phones.count) {
                        let phone = phones[i]
                        let headers = [("User-Identifier", phone.userIdentifier), ("User-Agent", WorkloadTarget.userAgent),
                                       ("Authorization", phone.uploadToken)]
                        var outcome = await transport.post("/key", headers: headers, body: bodies[phone.keyIndex])
                        var tries = 0
                        while outcome.status == 503 || outcome.status == 429, tries < 20 {
                            tries += 1
                            try await Task.sleep(for: .seconds(Double(outcome.retryAfterSeconds ?? 1)))
                            outcome = await transport.post("/key", headers: headers, body: bodies[phone.keyIndex])
                        }
                        if outcome.status != 200 {
                            failed += 1
                            writeStderr("phone \(i): /key answered \(outcome.status) \(outcome.failure ?? "")\n")
                        }
                        progress.advance()
                    }
                    return failed
                }
            }
            return try await group.reduce(0, +)
        }
        progress.finish()
        await transport.shutdown()
        guard failures == 0 else { throw WorkloadError("\(failures) of \(phones.count) key uploads failed") }
    }
}
