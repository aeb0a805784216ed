import BFV
import ConformanceSupport
import Foundation
import LookupClient
import LookupProtocol
import LookupService
import ServiceTestSupport
import PIR
import ServiceCore
import SwiftProtobuf
import Testing

/// The reference service's recorded exchanges (`../shared/conformance/service/`): our config builder
/// reproduces its `PIRConfig` bytes and ids, and our server, serving the same processed dataset, answers every
/// recorded `/config`, `/key` and `/queries` request as the reference did.
@Suite("Service conformance (recorded exchanges)", .enabled(if: Conformance.available, Comment(rawValue: Conformance.skipMessage)))
struct ServiceConformanceTests {
    static let block = "net.example.lookup.block"
    static let identity = "net.example.lookup.identity"
    static let sessions = ["ios18.0", "ios18.2"]

    static func file(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: Conformance.root!.appendingPathComponent("service/\(path)")))
    }

    static func manifest() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(try file("manifest.json"))) as! [String: Any]
    }

    static func useCases() -> [ServiceConfig.UseCase] {
        let dataset = Conformance.root!.appendingPathComponent("service/dataset").path
        return [.init(name: block, fileStem: "\(dataset)/block", shardCount: 2),
                .init(name: identity, fileStem: "\(dataset)/identity", shardCount: 3)]
    }

    static func configuration(_ useCase: ServiceConfig.UseCase) throws -> UseCaseConfiguration {
        let params = try (0..<useCase.shardCount!).map { i in
            try ProtoPirParameters(textFormatString: String(decoding: Data(contentsOf: URL(fileURLWithPath: "\(useCase.fileStem ?? "")-\(i).params.txtpb")), as: UTF8.self))
        }
        return try UseCaseConfiguration(shardParameters: params)
    }

    @Test("PIRConfig bytes, config ids and key-config hashes equal the reference's, in both platform forms")
    func configBuilder() throws {
        for useCase in Self.useCases() {
            let ours = try Self.configuration(useCase)
            let first = useCase.name == Self.block ? "01-block-first" : "02-identity-first"
            for session in Self.sessions {
                let captured = try ProtoConfigResponse(serializedBytes: try Self.file("config/\(session)/\(first).response.binpb"))
                let config = try #require(captured.configs[useCase.name])
                let features: ClientFeatures = session == "ios18.0" ? .legacy : .newest
                let ourBytes: [UInt8] = try ours.pirConfig(for: features).serializedBytes()
                let theirBytes: [UInt8] = try config.pirConfig.serializedBytes()
                #expect(ourBytes == theirBytes, "\(session) \(useCase.name) PIRConfig bytes")
                #expect(ours.configID == [UInt8](config.configID), "\(session) \(useCase.name) config id")
                let keyStatus = try #require(captured.keyInfo.first)
                #expect(try ours.keyConfig.serializedBytes() == (try keyStatus.keyConfig.serializedBytes() as [UInt8]))
                #expect(ours.keyConfigHash == [UInt8](config.pirConfig.evaluationKeyConfigHash))
                print("checked service/config/\(session)/\(first): PIRConfig \(ourBytes.count) bytes identical, config id identical")
            }
        }
    }

    @Test("Replaying every recorded /config, /key and /queries request gets the reference's answers")
    func replay() async throws {
        let directory = try temporaryDirectory()
        // The recorded tokens were issued by the reference's (unavailable) keys: authentication is off here and
        // tested with our own issuer elsewhere.
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: Self.useCases(),
                                                                                   privacyPass: false))
        defer { Task { await server.stop() } }
        let manifest = try Self.manifest()
        let sessions = manifest["sessions"] as! [String: Any]
        var identicalResponses = 0
        for session in Self.sessions {
            let info = sessions[session] as! [String: Any]
            let headers = [("User-Identifier", info["user_identifier"] as! String), ("User-Agent", info["user_agent"] as! String)]
            func exchange(_ request: String, expect response: String) async throws -> ProtoConfigResponse {
                let (status, body) = try await server.post("/config", body: try Self.file(request), headers: headers)
                #expect(status == 200, "\(request)")
                let ours = try ProtoConfigResponse(serializedBytes: body)
                let theirs = try ProtoConfigResponse(serializedBytes: try Self.file(response))
                return try Self.compare(ours, theirs, name: request)
            }
            // Before any key upload: timestamps 0.
            for name in ["01-block-first", "02-identity-first"] {
                let ours = try await exchange("config/\(session)/\(name).request.binpb", expect: "config/\(session)/\(name).response.binpb")
                #expect(ours.keyInfo.allSatisfy { $0.timestamp == 0 })
            }
            for useCase in ["block", "identity"] {
                let (status, body) = try await server.post("/key", body: try Self.file("key/\(session)/\(useCase).request.binpb"), headers: headers)
                #expect(status == 200 && body.isEmpty, "key/\(session)/\(useCase)")
            }
            for name in ["03-block-refetch", "04-identity-refetch", "05-both-no-ids", "08-empty-request"] {
                _ = try await exchange("config/\(session)/\(name).request.binpb", expect: "config/\(session)/\(name).response.binpb")
            }
            // 06/07: ids paired by position, so both use cases are "reuse" (the reference's pairing bug is not copied).
            for name in ["06-both-ids", "07-both-ids-reversed"] {
                let (status, body) = try await server.post("/config", body: try Self.file("config/\(session)/\(name).request.binpb"), headers: headers)
                #expect(status == 200)
                let ours = try ProtoConfigResponse(serializedBytes: body)
                #expect(ours.configs.count == 2 && ours.configs.values.allSatisfy { $0.reuseExistingConfig }, "\(session) \(name)")
                let timestamps = Set(ours.keyInfo.map(\.timestamp))
                let usecases = info["usecases"] as! [String: [String: Any]]
                #expect(timestamps == Set(usecases.values.map { ($0["key_timestamp"] as! NSNumber).uint64Value }))
            }
            // Queries: decrypt our answers with the device's secret key.
            let queries = info["queries"] as! [[String: Any]]
            for query in queries {
                let useCase = query["usecase"] as! String
                let short = useCase == Self.block ? "block" : "identity"
                let (status, body) = try await server.post("/queries", body: try Self.file(query["request"] as! String), headers: headers)
                #expect(status == 200, "\(query["request"]!)")
                let configuration = try Self.configuration(Self.useCases().first { $0.name == useCase }!)
                let context = try Context(parameters: configuration.encryption)
                let sk = try ProtoSecretKey(serializedBytes: try Self.file("queries/\(session)/secret-key.\(short).binpb"))
                let secretKey = try SecretKey(deserialize: [UInt8](sk.polys), context: context)
                let client = try KeywordPirClient(context: context, shards: configuration.shards, sharding: configuration.sharding)
                let responses = try ProtoResponses(serializedBytes: body)
                let reply = try #require(responses.responses.first?.pirResponse)
                let value = try client.decrypt(replies: try reply.native(context: context),
                                               keyword: Array((query["number"] as! String).utf8), secretKey: secretKey)
                let expected = (query["decrypted_value_hex"] as? String).flatMap { hexDecode($0) }
                let present = query["decoded_block"] != nil && !(query["decoded_block"] is NSNull)
                    || query["decoded_identity"] != nil && !(query["decoded_identity"] is NSNull)
                #expect(value == (present ? expected : nil), "\(query["request"]!)")
                if body == (try Self.file(query["response"] as! String)) { identicalResponses += 1 }
            }
            print("checked service/\(session): 8 /config, 2 /key, \(queries.count) /queries exchanges")
        }
        print("responses byte-identical to the reference's: \(identicalResponses) of 20")
        await server.stop()
    }

    /// Compares two config responses field by field (map and key-status order are free); returns ours.
    static func compare(_ ours: ProtoConfigResponse, _ theirs: ProtoConfigResponse, name: String) throws -> ProtoConfigResponse {
        #expect(ours.configs == theirs.configs, "\(name): configs")
        let a = try ours.keyInfo.map { try $0.serializedBytes() as [UInt8] }.sorted { $0.lexicographicallyPrecedes($1) }
        let b = try theirs.keyInfo.map { try $0.serializedBytes() as [UInt8] }.sorted { $0.lexicographicallyPrecedes($1) }
        #expect(a == b, "\(name): key_info")
        return ours
    }
}
