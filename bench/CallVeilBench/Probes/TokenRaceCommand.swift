import ArgumentParser
import Foundation
import LookupClient
import LookupProtocol

/// `callveil-bench token-race`: checks that front doors sharing a store spend a Privacy Pass token once. Each trial
/// takes a fresh token and presents it at every given front door at the same moment; exactly one must accept it
/// (200) and every other must refuse it as spent (401). Exits non-zero otherwise.
struct TokenRaceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token-race",
        abstract: "Present each Privacy Pass token at several front doors at once: exactly one may accept it.")

    @Option(help: "A front door's base URL; give two or more.")
    var url: [String]

    @Option(help: "The app's user token for issuance.")
    var userToken: String = "AAAA"

    @Option(help: "Use case named in the /config request each token is spent on.")
    var usecase: String = "net.example.lookup.block"

    @Option(help: "Trials.")
    var trials: Int = 100

    func run() async throws {
        guard url.count >= 2 else { throw ValidationError("give --url at least twice") }
        guard (1...100_000).contains(trials) else { throw ValidationError("--trials must be between 1 and 100000") }
        let doors = url.map { LookupHTTPClient(baseURL: $0) }
        let tokens = PrivacyPassAuthorization(issuer: doors[0], userToken: userToken, batch: 16)
        let body: [UInt8] = try ProtoConfigRequest.with { $0.usecases = [usecase] }.serializedBytes()
        let headers = [("User-Identifier", "token-race-\(UUID().uuidString)"), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 callveil-token-race")]
        var exactlyOnce = 0
        var failures: [String] = []
        for trial in 0..<trials {
            guard let token = try await tokens.authorization() else { throw ValidationError("the server issues no tokens (Privacy Pass is off)") }
            let statuses = await withTaskGroup(of: Int.self) { group in
                for door in doors {
                    group.addTask {
                        (try? await door.send(path: "/config", headers: headers + [("Authorization", token)], body: body).status) ?? 0
                    }
                }
                var all: [Int] = []
                for await status in group { all.append(status) }
                return all.sorted()
            }
            if statuses == [200] + Array(repeating: 401, count: doors.count - 1) {
                exactlyOnce += 1
            } else if failures.count < 10 {
                failures.append("trial \(trial): \(statuses)")
            }
        }
        print("token-race: \(exactlyOnce)/\(trials) tokens accepted exactly once across \(doors.count) front doors")
        if exactlyOnce != trials {
            for failure in failures { print("  \(failure)") }
            throw ExitCode(1)
        }
    }
}
