import ArgumentParser
import AsyncHTTPClient
import BFV
import Crypto
import Foundation
import LookupClient
import LookupProtocol
import PIR

/// `callveil-bench workload prepare`: makes a population of phones against a running service and writes them to a
/// directory: each phone's User-Identifier, key and `/key` token; then calls (a phone drawn at random, a number
/// present or absent, each use case's `/queries` body encrypted under that phone's key with a Privacy Pass token
/// already issued, and the expected answers). Phones share `--distinct-keys` secret keys (keys cost tens of
/// milliseconds each to make); every phone still uploads and is served its key under its own identifier.
struct WorkloadPrepareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "prepare", abstract: "Make phones, their keys and their calls.")

    @Option(help: "The workload directory.") var dir: String
    @Option(help: "The service's base URL (tokens and config are fetched from it).") var url: String
    @Option(help: "PEM file of a CA to trust (a test certificate).") var ca: String?
    @Option(help: "The dataset the service serves (its identities.csv is the truth).") var dataset: String
    @Option(help: "Phones.") var phones = 20_000
    @Option(help: "Distinct secret keys the phones share.") var distinctKeys = 100
    @Option(help: "Calls to prepare (each replay uses the next unused ones).") var calls = 10_000
    @Option(help: "Share of calls from numbers in no dataset.") var absentShare = 0.25
    @Option(help: "The app's user token for Privacy Pass.") var userToken = "AAAA"
    @Option(help: "Tokens issued concurrently.") var issuers = 4
    @Option(help: "Seed (phones, calls and their order).") var seed: UInt64 = 1

    func run() async throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let started = ContinuousClock.now
        let truth = try BenchDataset.truth(csv: "\(dataset)/identities.csv", acceptEither: nil, convergedMarker: nil, seed: seed)
        let httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .trusting(ca))
        defer { _ = httpClient.shutdown() }
        let http = LookupHTTPClient(baseURL: url, client: httpClient)
        let minters = (0..<max(issuers, 1)).map { _ in PrivacyPassAuthorization(issuer: http, userToken: userToken, batch: 16) }

        // The service's configs, as a phone's first /config gets them.
        let names = [BenchDataset.block, BenchDataset.identity]
        let configBody = try ProtoConfigRequest.with { $0.usecases = names }.serializedBytes() as [UInt8]
        var headers = [("User-Identifier", UUID().uuidString), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 CallVeil")]
        if let auth = try await minters[0].authorization() { headers.append(("Authorization", auth)) }
        let (status, answer) = try await http.send(path: "/config", headers: headers, body: configBody)
        guard status == 200 else { throw WorkloadError("/config answered \(status)") }
        let response = try ProtoConfigResponse(serializedBytes: answer)
        var useCases: [WorkloadManifest.UseCase] = []
        for name in names {
            guard let config = response.configs[name], case .pirConfig(let pir)? = config.config else { throw WorkloadError("no PIR config for \(name)") }
            useCases.append(.init(name: name, configID: config.configID.base64EncodedString(),
                                  pirConfig: try pir.serializedData().base64EncodedString()))
        }
        var distinctConfigs: [WorkloadManifest.KeyConfig] = []
        for status in response.keyInfo {  // use cases that share a key config share one key (the list names it once per use case)
            let bytes: [UInt8] = try status.keyConfig.serializedBytes()
            let config = WorkloadManifest.KeyConfig(hash: Data(SHA256.hash(data: bytes)).base64EncodedString(), message: Data(bytes).base64EncodedString())
            if !distinctConfigs.contains(where: { $0.hash == config.hash }) { distinctConfigs.append(config) }
        }
        let keyConfigs = distinctConfigs
        let (gatewayStatus, gatewayKeys) = try await http.send(method: .GET, path: "/ohttp-configs", headers: [], body: nil)
        var manifest = WorkloadManifest(url: url, gatewayKeys: gatewayStatus == 200 ? Data(gatewayKeys).base64EncodedString() : nil,
                                        useCases: useCases, keyConfigs: keyConfigs, phones: phones, distinctKeys: distinctKeys,
                                        calls: 0, keyTimestamp: UInt64(Date().timeIntervalSince1970), seed: seed, dataset: dataset)
        let clients = try manifest.clients()
        writeStderr("workload: \(useCases.count) use cases, \(keyConfigs.count) key configs, gateway \(manifest.gatewayKeys == nil ? "absent" : "present")\n")

        // Distinct secret keys and their /key bodies.
        let timestamp = manifest.keyTimestamp
        let keyMessages = try keyConfigs.map { try EvaluationKeyConfigMessage(serializedBytes: try WorkloadManifest.decode($0.message)) }
        let keySets = try await Self.parallel(distinctKeys, label: "keys") { _ in
            try keyMessages.enumerated().map { index, message -> (SecretKey, ProtoUploadedKey) in
                let context = try Context(parameters: try message.encryptionParameters.native())
                let secretKey = SecretKey(context: context)
                return (secretKey, try LookupDevice.uploadedKey(for: message, hash: try WorkloadManifest.decode(keyConfigs[index].hash),
                                                                timestamp: timestamp, secretKey: secretKey))
            }
        }
        var secrets = RecordWriter(), bodies = RecordWriter()
        for set in keySets {
            for (secretKey, _) in set { secrets.field(secretKey.serialize()) }
            bodies.field(try ProtoEvaluationKeys.with { $0.keys = set.map(\.1) }.serializedBytes())
        }
        try secrets.write(to: "\(dir)/secret-keys.bin")
        try bodies.write(to: "\(dir)/key-bodies.bin")

        // Phones, each with the token for its upload.
        var rng = SplitMix64(seed: seed)
        let uploadTokens = try await Self.tokens(phones, minters: minters, label: "upload tokens")
        let population = (0..<phones).map { i in
            WorkloadPhone(userIdentifier: Self.uuid(&rng), keyIndex: i % max(distinctKeys, 1), uploadToken: uploadTokens[i])
        }
        try WorkloadPhone.save(population, to: dir)

        // Calls: the phone, the number and the expected answers chosen here; queries encrypted in parallel.
        let plan = (0..<calls).map { _ -> (phone: Int, number: String, expected: [[UInt8]?]) in
            let phone = Int(rng.next() % UInt64(phones))
            if Double(rng.next() % 1_000_000) / 1_000_000 < absentShare || truth.present.isEmpty {
                return (phone, truth.absent[Int(rng.next() % UInt64(truth.absent.count))], [nil, nil])
            }
            let row = truth.present[Int(rng.next() % UInt64(truth.present.count))]
            return (phone, row.number, [row.block, row.identity])
        }
        let queryTokens = try await Self.tokens(calls * clients.count, minters: minters, label: "query tokens")
        let prepared = try await Self.parallel(calls, label: "calls") { c in
            let (phone, number, expected) = plan[c]
            let keys = keySets[population[phone].keyIndex]
            let requests = try clients.enumerated().map { u, useCase -> (token: String, body: [UInt8]) in
                let request = try LookupDevice.queryRequest(Array(number.utf8), in: useCase.name, client: useCase.client,
                                                            configID: useCase.configID, keyConfigHash: try WorkloadManifest.decode(keyConfigs[useCase.keyConfig].hash),
                                                            secretKey: keys[useCase.keyConfig].0, timestamp: timestamp)
                return (queryTokens[c * clients.count + u], try request.serializedBytes())
            }
            return WorkloadCall(phone: phone, number: number, expected: expected, requests: requests)
        }
        try WorkloadCall.save(prepared, to: dir)
        manifest.calls = calls
        try manifest.save(dir)
        try WorkloadCursor.save(0, to: dir)
        let seconds = (ContinuousClock.now - started).seconds
        writeStderr(String(format: "prepared %d phones (%d distinct keys), %d calls in %.0f s: %@\n", phones, distinctKeys, calls, seconds, dir))
    }

    /// `count` Privacy Pass authorizations, issued by the minters concurrently, with progress.
    static func tokens(_ count: Int, minters: [PrivacyPassAuthorization], label: String) async throws -> [String] {
        let progress = WorkloadProgress(label: label, total: count)
        return try await withThrowingTaskGroup(of: [(Int, String)].self) { group in
            for (m, minter) in minters.enumerated() {
                group.addTask {
                    var mine: [(Int, String)] = []
                    for i in stride(from: m, to: count, by: minters.count) {
                        guard let token = try await minter.authorization() else { throw WorkloadError("Privacy Pass is off on the service") }
                        mine.append((i, token))
                        progress.advance()
                    }
                    return mine
                }
            }
            var all = [String](repeating: "", count: count)
            for try await part in group { for (i, token) in part { all[i] = token } }
            progress.finish()
            return all
        }
    }

    /// `work(i)` for i in 0..<count on every core, results in order, with progress.
    static func parallel<T: Sendable>(_ count: Int, label: String, _ work: @escaping @Sendable (Int) throws -> T) async throws -> [T] {
        let progress = WorkloadProgress(label: label, total: count)
        let lanes = max(ProcessInfo.processInfo.activeProcessorCount, 1)
        return try await withThrowingTaskGroup(of: [(Int, T)].self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    var mine: [(Int, T)] = []
                    for i in stride(from: lane, to: count, by: lanes) {
                        mine.append((i, try work(i)))
                        progress.advance()
                    }
                    return mine
                }
            }
            var all = [T?](repeating: nil, count: count)
            for try await part in group { for (i, value) in part { all[i] = value } }
            progress.finish()
            return all.map { $0! }
        }
    }

    /// A random UUID-shaped User-Identifier drawn from `rng` (reproducible for a seed).
    static func uuid(_ rng: inout SplitMix64) -> String {
        let hex = String(format: "%016llX%016llX", rng.next(), rng.next())
        let c = Array(hex)
        return "\(String(c[0..<8]))-\(String(c[8..<12]))-\(String(c[12..<16]))-\(String(c[16..<20]))-\(String(c[20..<32]))"
    }
}
