import ArgumentParser
import BFV
import Foundation
import LookupClient
import LookupProtocol

/// `callveil-bench workload check`: decrypts every answer a replay wrote with the phone's secret key and compares
/// it with the truth prepared for its call; exits non-zero on a wrong answer or an undecodable one.
struct WorkloadCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Check a replay's answers offline.")

    @Option(help: "The workload directory.") var dir: String
    @Option(help: "Name of the run to check.") var label = "run"

    func run() async throws {
        let manifest = try WorkloadManifest.load(dir)
        let clients = try manifest.clients()
        let phones = try WorkloadPhone.load(dir)
        let calls = try WorkloadCall.load(dir)
        let results = try WorkloadResult.load("\(dir)/results-\(label).bin").filter { $0.status == 200 }
        var reader = try RecordReader(path: "\(dir)/secret-keys.bin")
        let contexts = try manifest.keyConfigs.map { config in
            let message = try EvaluationKeyConfigMessage(serializedBytes: try WorkloadManifest.decode(config.message))
            return try Context(parameters: try message.encryptionParameters.native())
        }
        var keys: [[SecretKey]] = []
        while !reader.atEnd { keys.append(try contexts.map { try SecretKey(deserialize: try reader.field(), context: $0) }) }
        let secrets = keys
        let verdicts = try await WorkloadPrepareCommand.parallel(results.count, label: "answers checked") { i -> String? in
            let result = results[i]
            guard result.call < calls.count, result.useCase < clients.count else { return "result \(i) names no prepared request" }
            let call = calls[result.call]
            let useCase = clients[result.useCase]
            let secretKey = secrets[phones[call.phone].keyIndex][useCase.keyConfig]
            do {
                let value = try LookupDevice.decode(result.body, keyword: Array(call.number.utf8), client: useCase.client, secretKey: secretKey)
                return value == call.expected[result.useCase] ? nil : "call \(result.call) \(useCase.name): a wrong answer"
            } catch {
                return "call \(result.call) \(useCase.name): \(error)"
            }
        }
        let wrong = verdicts.compactMap { $0 }
        print("checked \(results.count) answers of run \(label): \(wrong.count) wrong")
        for line in wrong.prefix(10) { print("  \(line)") }
        if !wrong.isEmpty { throw ExitCode(1) }
    }
}
