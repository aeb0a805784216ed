import ArgumentParser
import AsyncHTTPClient
import Foundation
import LookupClient

/// `callveil-bench workload key-flood`: `make overload`'s `/key` flood beside a replay, in a process of its own (so
/// that the replay's own CPU and lag are not its): uploaders of a prepared phone's key padded to `--megabytes`, each
/// upload from a new User-Identifier with a token of its own, straight to the service (not through the gateway), for
/// `--seconds`; prints what the uploads got.
struct WorkloadKeyFloodCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "key-flood", abstract: "Flood the service with oversized /key uploads.")

    @OptionGroup var target: WorkloadTarget
    @Option(help: "Uploads at once.") var uploaders = 16
    @Option(help: "Size of each upload, MiB.") var megabytes = 10
    @Option(help: "Seconds to run.") var seconds = 60.0
    @Option(help: "User token the uploads' Privacy Pass tokens are minted for (its own: issuance is limited per user token).")
    var userToken = "CCCC"

    func run() async throws {
        let manifest = try WorkloadManifest.load(target.dir)
        var reader = try RecordReader(path: "\(target.dir)/key-bodies.bin")
        let keyBody = try reader.field()
        var configuration = HTTPClient.Configuration.trusting(target.ca)
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: uploaders + 4)
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let tally = StatusTally()
        let end = ContinuousClock.now + .seconds(seconds)
        await OverloadFlood.keys(http: LookupHTTPClient(baseURL: target.url ?? manifest.url, client: client), userToken: userToken,
                                 keyBody: keyBody, uploadBytes: megabytes << 20, concurrency: uploaders, tally: tally,
                                 stop: { ContinuousClock.now >= end })
        try? await client.shutdown()
        print("/key flood (\(megabytes) MiB each, \(uploaders) at once, \(Int(seconds)) s): \(tally.total) uploads, \(tally.summary)")
    }
}
