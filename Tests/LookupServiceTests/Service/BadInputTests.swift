import Foundation
import LookupClient
import LookupCoordinator
import LookupDeployment
import LookupProtocol
import LookupService
import ServiceCore
import ServiceTestSupport
import SwiftProtobuf
import Testing

/// Every row of the bad-input table in `docs/operations.md`: the status and reason the server answers, and
/// that the next good request still succeeds.
@Suite("Bad input gets a clear error and the server keeps running")
struct BadInputTests {
    struct Case: Sendable {
        let name: String
        let path: String
        let headers: [(String, String)]?  // nil: the device's headers
        let body: [UInt8]
        let status: Int
        let reason: String
    }

    /// Run against `--workers 0` (the PIR core in the HTTP process) and the default `serve` (an embedded
    /// coordinator and worker: errors cross the cluster as error codes and come back as the same answers).
    @Test("Bad-input table", arguments: [0, 1])
    func table(workers: Int) async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 120)
        let cluster = try EmbeddedCluster()
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases),
                                                makeExecutor: workers == 0 ? nil : cluster.makeExecutor(logger: TestServer.logger))
        let embedded = try await cluster.startWorkers(count: workers, dataDirectory: "\(directory)/embedded", threads: 1,
                                                      server: server.server, logger: TestServer.logger)
        let device = server.device()
        let number = Array(data.records[0].number.utf8)
        let good = try await device.queryRequest(number, in: DemoDataset.block)
        let headers = [("User-Identifier", await device.userIdentifier), ("User-Agent", await device.userAgent)]
        func mutated(_ change: (inout ProtoPIRRequest) -> Void) throws -> [UInt8] {
            var request = good
            change(&request.requests[0].pirRequest)
            return try request.serializedBytes()
        }
        var unknownUseCase = good
        unknownUseCase.requests[0].usecase = "net.example.lookup.nothing"
        let otherConfig = try await device.queryRequest(number, in: DemoDataset.identity)
        var wrongKey = good
        wrongKey.requests[0].pirRequest.evaluationKeyMetadata = otherConfig.requests[0].pirRequest.evaluationKeyMetadata
        let keyUpload = ProtoEvaluationKeys.with { $0.keys = [.with { $0.metadata = .with { $0.timestamp = 1 } }] }
        let badKey = ProtoEvaluationKeys.with {
            $0.keys = [.with {
                $0.metadata = .with {
                    $0.timestamp = 1
                    $0.identifier = good.requests[0].pirRequest.evaluationKeyMetadata.identifier
                }
                $0.evaluationKey = .with { $0.galoisKey = .with { $0.keySwitchKeys[3] = .init() } }
            }]
        }
        let cases: [Case] = [
            .init(name: "malformed protobuf /config", path: "/config", headers: nil, body: [0x0a, 0xff, 0x01], status: 400, reason: "Malformed"),
            .init(name: "malformed protobuf /key", path: "/key", headers: nil, body: [0x12, 0x05, 0x01], status: 400, reason: "Malformed"),
            .init(name: "malformed protobuf /queries", path: "/queries", headers: nil, body: [0xff, 0xff, 0xff], status: 400, reason: "Malformed"),
            .init(name: "unknown use case", path: "/queries", headers: nil, body: try unknownUseCase.serializedBytes(), status: 400, reason: "Unknown usecase"),
            .init(name: "missing evaluation key", path: "/queries", headers: [("User-Identifier", "nobody"), headers[1]],
                  body: try good.serializedBytes(), status: 400, reason: "Evaluation key not found"),
            .init(name: "stale key timestamp", path: "/queries", headers: nil,
                  body: try mutated { $0.evaluationKeyMetadata.timestamp += 1 }, status: 400, reason: "Evaluation key not found"),
            .init(name: "key for another config", path: "/queries", headers: nil, body: try wrongKey.serializedBytes(), status: 400,
                  reason: "another key config"),
            .init(name: "shard index out of range", path: "/queries", headers: nil, body: try mutated { $0.shardIndex = 7 }, status: 400,
                  reason: "Shard index 7 out of range"),
            .init(name: "zero ciphertexts", path: "/queries", headers: nil, body: try mutated { $0.query.ciphertexts = [] }, status: 400,
                  reason: "no ciphertexts"),
            .init(name: "truncated ciphertext", path: "/queries", headers: nil,
                  body: try mutated { $0.query.ciphertexts[0].seeded.poly0 = $0.query.ciphertexts[0].seeded.poly0.prefix(1000) },
                  status: 400, reason: "Invalid"),
            .init(name: "wrong num_pir_calls", path: "/queries", headers: nil, body: try mutated { $0.query.numPirCalls = 1 << 40 },
                  status: 400, reason: "num_pir_calls"),
            .init(name: "unknown config id", path: "/queries", headers: nil, body: try mutated { $0.configurationHash = Data(repeating: 1, count: 32) },
                  status: 410, reason: "no longer available"),
            .init(name: "shard_id set", path: "/queries", headers: nil, body: try mutated { $0.shardID = "a" }, status: 501, reason: "shard_id"),
            .init(name: "empty Requests", path: "/queries", headers: nil, body: [], status: 400, reason: "No requests"),
            .init(name: "oversized body", path: "/key", headers: nil, body: [UInt8](repeating: 0, count: LookupRequestContext.maxBodyBytes + 1),
                  status: 413, reason: "exceeds"),
            .init(name: "key body larger than the loaded key configs need", path: "/key", headers: nil,
                  body: [UInt8](repeating: 0, count: 4 << 20), status: 413, reason: "exceeds"),
            .init(name: "key without evaluation_key", path: "/key", headers: nil, body: try keyUpload.serializedBytes(), status: 400,
                  reason: "no evaluation_key"),
            .init(name: "key with wrong Galois elements", path: "/key", headers: nil, body: try badKey.serializedBytes(), status: 400, reason: "Invalid"),
            .init(name: "config ids not one per use case", path: "/config", headers: nil,
                  body: try ProtoConfigRequest.with { $0.usecases = [DemoDataset.block]; $0.existingConfigIds = [Data(), Data()] }.serializedBytes(),
                  status: 400, reason: "existing_config_ids"),
            .init(name: "missing User-Identifier", path: "/config", headers: [headers[1]], body: [], status: 400, reason: "Missing 'User-Identifier' header"),
            .init(name: "missing User-Agent", path: "/config", headers: [headers[0]], body: [], status: 400, reason: "Missing 'User-Agent' header"),
        ]
        for c in cases {
            let (status, body) = try await server.post(c.path, body: c.body, headers: c.headers ?? headers)
            let text = String(decoding: body, as: UTF8.self)
            #expect(status == c.status, "\(c.name): status \(status), body \(text)")
            #expect(text.contains(c.reason), "\(c.name): body \(text)")
            #expect(text.hasPrefix("{\"error\":{\"message\":"), "\(c.name): JSON error body")
            // The server keeps running and answers the next good request.
            let (goodStatus, answer) = try await server.post("/queries", body: try good.serializedBytes(), headers: headers)
            #expect(goodStatus == 200, "after \(c.name)")
            #expect(try await device.decode(answer, keyword: number, in: DemoDataset.block) == [data.records[0].block ? 1 : 0])
            print("bad input (workers \(workers)): \(c.name) -> \(status) \(text.prefix(100))")
        }
        for worker in embedded { worker.stop() }
        await server.stop()
        await server.server.executor.stop()
    }
}
