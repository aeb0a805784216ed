import ArgumentParser
import AsyncHTTPClient
import Dataset
import Foundation
import Onboarding
import LookupClient
import LookupProtocol
import NIOSSL

/// `callveil query`: looks numbers up like an iPhone does (Privacy Pass tokens, config sync, key upload,
/// encrypted queries) and prints the decrypted block decision and identity.
struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Look phone numbers up on a Live Caller ID Lookup server, as a device does.")

    @Option(help: "Server base URL.")
    var url: String = "http://127.0.0.1:8080"

    @Option(help: "Phone number (E.164); repeat for several.")
    var number: [String]

    @Option(help: "User-Agent header (decides config features).")
    var userAgent: String = "com.apple.ciphermld/1.0 iOS/18.2 callveil-query"

    @Option(help: "User-Identifier header (default: random per run).")
    var userIdentifier: String?

    @OptionGroup var device: DeviceOptions

    @Option(help: "Seconds the whole run may take (tokens, config, key upload, every lookup) before it fails.")
    var timeout: Double = 120

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be in (0, 3600] seconds") }
    }

    func run() async throws {
        let probe = DeviceProbe(device.settings(url: url, userAgent: userAgent, userIdentifier: userIdentifier))
        let numbers = try number.map { raw in
            guard let normalized = IdentityDataset.normalize(raw) else { throw ValidationError("\(raw) is not an E.164 number") }
            return normalized
        }
        do {
            try await withDeadline(seconds: timeout) {
                let device = try await probe.makeDevice()
                for number in numbers {
                    let answer = try await probe.lookUp(number, device: device)
                    print(Self.describe(number: number, block: answer.block, identity: answer.identity))
                }
            }
        } catch {
            await probe.shutdown()
            throw error
        }
        await probe.shutdown()
    }

    static func describe(number: String, block: [UInt8]?, identity: [UInt8]?) -> String {
        var lines = ["\(number)"]
        switch block {
        case nil: lines.append("  block: not listed")
        case let value?: lines.append("  block: \(value == [1] ? "BLOCKED" : "not blocked") (value \(value.map { String($0) }.joined(separator: ",")))")
        }
        if let identity {
            if let decoded = try? CallIdentity(serializedBytes: identity) {
                let category: String
                switch decoded.category {
                case .person: category = "person"
                case .business: category = "business"
                default: category = "unspecified"
                }
                lines.append("  identity: name \"\(decoded.name)\", category \(category), cache expiry \(decoded.cacheExpiryMinutes) min"
                             + (decoded.hasIcon ? ", icon \(decoded.icon.image.count) bytes" : ""))
            } else {
                lines.append("  identity: \(identity.count) bytes that are not a CallIdentity")
            }
        } else {
            lines.append("  identity: none")
        }
        return lines.joined(separator: "\n")
    }
}
