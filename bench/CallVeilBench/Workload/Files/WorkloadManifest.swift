import Foundation
import LookupClient
import LookupProtocol
import PIR

/// `workload.json`: what `workload prepare` made (against which service, its use cases and key configs as the
/// service sent them, how many phones, distinct keys and calls) and the run's seed.
struct WorkloadManifest: Codable {
    /// One use case as `/config` described it (`configID` and the `PIRConfig` message in base64).
    struct UseCase: Codable {
        var name: String
        var configID: String
        var pirConfig: String
    }

    /// One evaluation-key config (its SHA-256 hash and its message, base64).
    struct KeyConfig: Codable {
        var hash: String
        var message: String
    }

    var url: String
    /// The `/ohttp-configs` bytes in base64 (nil: the service has no gateway).
    var gatewayKeys: String?
    var useCases: [UseCase]
    var keyConfigs: [KeyConfig]
    var phones: Int
    var distinctKeys: Int
    var calls: Int
    /// The timestamp of every phone's uploaded key.
    var keyTimestamp: UInt64
    var seed: UInt64
    /// The dataset whose `identities.csv` is the truth.
    var dataset: String

    static func path(_ directory: String) -> String { "\(directory)/workload.json" }

    static func load(_ directory: String) throws -> WorkloadManifest {
        guard let data = FileManager.default.contents(atPath: path(directory)) else {
            throw WorkloadError("no workload in \(directory) (run workload prepare)")
        }
        return try JSONDecoder().decode(WorkloadManifest.self, from: data)
    }

    func save(_ directory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: Self.path(directory)), options: .atomic)
    }

    /// Each use case's keyword-PIR client, config id and key-config index, in the manifest's order.
    func clients() throws -> [(name: String, client: KeywordPirClient, configID: [UInt8], keyConfig: Int)] {
        try useCases.map { useCase in
            let pir = try ProtoPIRConfig(serializedBytes: try Self.decode(useCase.pirConfig))
            let hash = [UInt8](pir.evaluationKeyConfigHash)
            guard let keyConfig = try keyConfigs.firstIndex(where: { try Self.decode($0.hash) == hash }) else {
                throw WorkloadError("\(useCase.name): its key config is not in the manifest")
            }
            return (useCase.name, try LookupDevice.pirClient(pir), try Self.decode(useCase.configID), keyConfig)
        }
    }

    static func decode(_ base64: String) throws -> [UInt8] {
        guard let data = Data(base64Encoded: base64) else { throw WorkloadError("workload.json: bad base64") }
        return [UInt8](data)
    }
}
