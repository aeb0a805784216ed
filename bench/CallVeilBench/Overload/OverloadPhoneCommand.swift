import ArgumentParser
import Foundation
import LookupClient
import Synchronization

/// `callveil-bench overload-phone` (internal to `callveil-bench overload`): the well-behaved phone in a process of its own, as
/// a real phone is a device of its own. In the flooding process its encryption and decryption would wait behind
/// the flood's client work on the same threads, and the run would measure the load generator instead of the
/// server. It syncs its keys, prints `ready`, looks numbers up until its standard input closes, then prints its
/// report as one line of JSON.
struct OverloadPhoneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "overload-phone",
        abstract: "The checked phone of `callveil-bench overload`, in its own process (started by it).",
        shouldDisplay: false)

    @Option(help: "The server's base URL.") var url: String
    @Option(help: "The dataset directory it serves (its identities.csv is the truth).") var dataset: String
    @Option(help: "User token of the phone.") var userToken = "AAAA"
    @Option(help: "Block use case.") var block = "net.example.lookup.block"
    @Option(help: "Identity use case.") var identity = "net.example.lookup.identity"
    @Option(help: "Random seed.") var seed: UInt64 = 1

    func run() async throws {
        let truth = try BenchDataset.truth(csv: "\(dataset)/identities.csv", acceptEither: nil, convergedMarker: nil, seed: seed)
        let http = LookupHTTPClient(baseURL: url)
        let clock = TimedAuthorization(PrivacyPassAuthorization(issuer: http, userToken: userToken, batch: 8))
        let device = LookupDevice(http: http, userIdentifier: "overload-phone-\(seed)", authorization: clock)
        try await device.syncConfig([block, identity])
        let phone = OverloadPhone(device: device, clock: clock, truth: truth, block: block, identity: identity)
        let stop = Stop()
        Thread.detachNewThread {  // the parent closes our standard input to stop us
            while let line = readLine(), !line.isEmpty {}
            stop.set()
        }
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        await phone.run(origin: .now, seed: seed) { stop.isSet }
        FileHandle.standardOutput.write(try JSONEncoder().encode(phone.report) + Data("\n".utf8))
    }

    /// A flag set once from another thread.
    final class Stop: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }
}
