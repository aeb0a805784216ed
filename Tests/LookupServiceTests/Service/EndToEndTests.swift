import Foundation
import LookupClient
import LookupProtocol
import LookupService
import ServiceTestSupport
import Testing

/// The service over real HTTP on loopback with our own processed dataset and our device-like client.
@Suite("Service end to end")
struct EndToEndTests {
    @Test("Present, absent and blocked numbers on both use cases; config reuse")
    func lookups() async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory)
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases))
        let device = server.device()
        try await device.syncConfig([DemoDataset.block, DemoDataset.identity])
        var checked = (blocked: 0, named: 0, unnamed: 0)
        for record in data.records.prefix(8) {
            let keyword = Array(record.number.utf8)
            let block = try await device.lookup(keyword, in: DemoDataset.block)
            #expect(block == [record.block ? 1 : 0], "block answer for \(record.number)")
            let identity = try await device.lookup(keyword, in: DemoDataset.identity)
            #expect(identity == (try record.callIdentity()), "identity answer for \(record.number)")
            if record.block { checked.blocked += 1 }
            if identity != nil { checked.named += 1 } else { checked.unnamed += 1 }
        }
        #expect(checked.blocked > 0 && checked.named > 0 && checked.unnamed > 0)
        let absent = Array(DemoDataset.absentNumber.utf8)
        #expect(try await device.lookup(absent, in: DemoDataset.block) == nil)
        #expect(try await device.lookup(absent, in: DemoDataset.identity) == nil)

        // Config reuse: the current id gets exactly `Config{reuse_existing_config: true}`.
        let ids = [await device.configID(DemoDataset.block)!, await device.configID(DemoDataset.identity)!]
        let request = ProtoConfigRequest.with {
            $0.usecases = [DemoDataset.identity, DemoDataset.block]
            $0.existingConfigIds = [Data(ids[1]), Data(ids[0])]
        }
        let answer = try await device.post("/config", body: try request.serializedBytes())
        let response = try ProtoConfigResponse(serializedBytes: answer)
        for name in [DemoDataset.block, DemoDataset.identity] {
            #expect(try response.configs[name]?.serializedBytes() == [0x20, 0x01], "\(name): reuse flag only")
        }
        // /config is gzip-encoded when the client accepts it (async-http-client sends `Accept-Encoding: deflate,
        // gzip` like a device and decodes the body); /queries answers are incompressible and sent as they are.
        let headers = [("User-Identifier", await device.userIdentifier), ("User-Agent", await device.userAgent),
                       ("Authorization", try #require(try await server.tokens?.authorization()))]
        let gz = try await server.http.exchange(path: "/config", headers: headers, body: try request.serializedBytes())
        #expect(gz.status == 200 && gz.headers.contains { $0.0.lowercased() == "content-encoding" && $0.1 == "gzip" })
        #expect(try ProtoConfigResponse(serializedBytes: gz.body) == response)
        let timestamps = Set(response.keyInfo.map(\.timestamp))
        #expect(timestamps == Set([await device.keyTimestamp(DemoDataset.block)!, await device.keyTimestamp(DemoDataset.identity)!]))
        print("checked 8 numbers on both use cases (\(checked.blocked) blocked, \(checked.named) named, \(checked.unnamed) without identity), 1 absent, config reuse")
        await server.stop()
    }

    @Test("A config id that is no longer retained gets 410; the device recovers by re-syncing")
    func expiredConfigID() async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, versionCount: 1)
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases))
        let device = server.device()
        let number = Array(data.records[1].number.utf8)
        #expect(try await device.lookup(number, in: DemoDataset.identity) != nil)
        // New data with another shard count: a new config id; with versionCount 1 the old one is dropped.
        _ = try DemoDataset.make(in: directory, identityShards: 3, versionCount: 1)
        #expect(try await server.server.reload().isEmpty)
        await #expect(throws: LookupClientError.self) { try await device.lookup(number, in: DemoDataset.identity) }
        do {
            _ = try await device.lookup(number, in: DemoDataset.identity)
        } catch let error as LookupClientError where error.code == .http {
            #expect(error.status == 410)
            #expect(error.body.contains("no longer available"))
        }
        try await device.syncConfig([DemoDataset.identity])
        #expect(try await device.lookup(number, in: DemoDataset.identity) == (try data.records[1].callIdentity()))
        await server.stop()
    }

    @Test("Evaluation keys survive a server restart")
    func keysSurviveRestart() async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory)
        let config = try writeServiceConfig(in: directory, usecases: data.useCases)
        let first = try await TestServer.start(configPath: config)
        let device = first.device()
        let number = Array(data.records[0].number.utf8)
        #expect(try await device.lookup(number, in: DemoDataset.block) == [1])
        let timestamp = try #require(await device.keyTimestamp(DemoDataset.block))
        await first.stop()

        let second = try await TestServer.start(configPath: config)
        let headers = [("User-Identifier", await device.userIdentifier), ("User-Agent", await device.userAgent)]
        let (status, body) = try await second.post("/config", body: try ProtoConfigRequest.with { $0.usecases = [DemoDataset.block] }.serializedBytes(),
                                                   headers: headers)
        #expect(status == 200)
        let statuses = try ProtoConfigResponse(serializedBytes: body).keyInfo
        #expect(statuses.map(\.timestamp) == [timestamp])
        // The device's stored key answers without a new upload.
        let query = try await device.queryRequest(number, in: DemoDataset.block)
        let (queryStatus, answer) = try await second.post("/queries", body: try query.serializedBytes(), headers: headers)
        #expect(queryStatus == 200)
        #expect(try await device.decode(answer, keyword: number, in: DemoDataset.block) == [1])
        await second.stop()
    }

    @Test("Reload while queries are in flight drops none of them; metrics and health report")
    func reloadAndObservability() async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory)
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases))
        let device = server.device()
        try await device.syncConfig([DemoDataset.block])
        let numbers = data.records.prefix(4).map { Array($0.number.utf8) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, number) in numbers.enumerated() {
                group.addTask {
                    let value = try await device.lookup(number, in: DemoDataset.block)
                    #expect(value == [data.records[i].block ? 1 : 0])
                }
            }
            group.addTask {
                let failed = try await server.server.reload()
                #expect(failed.isEmpty)
            }
            try await group.waitForAll()
        }
        let (status, metrics) = try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil)
        let text = String(decoding: metrics, as: UTF8.self)
        #expect(status == 200)
        #expect(text.contains("callveil_http_requests_total{route=\"/queries\",result=\"ok\"} 4"))
        #expect(text.contains("callveil_pir_compute_seconds_count{usecase=\"net.example.lookup.block\"} 4"))
        #expect(text.contains("callveil_evaluation_keys_stored 1"))
        let (healthStatus, health) = try await server.admin.send(method: .GET, path: "/healthz", headers: [], body: nil)
        #expect(healthStatus == 200 && String(decoding: health, as: UTF8.self).contains("net.example.lookup.identity"))
        await server.stop()
    }

    @Test("One User-Identifier holds at most one key per key config, however often it uploads")
    func keysPerUserBounded() async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory)
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases))
        let device = server.device()
        let names = [DemoDataset.block, DemoDataset.identity]
        for _ in 0..<3 {
            await device.forgetKeys()
            try await device.syncConfig(names)
        }
        let headers = [("User-Identifier", await device.userIdentifier), ("User-Agent", await device.userAgent)]
        let (_, body) = try await server.post("/config", body: try ProtoConfigRequest.with { $0.usecases = names }.serializedBytes(),
                                              headers: headers)
        let keyConfigs = Set(try ProtoConfigResponse(serializedBytes: body).keyInfo.map { try $0.keyConfig.serializedBytes() as [UInt8] })
        #expect(!keyConfigs.isEmpty)
        let usage = try await server.server.keyStore.usage()
        #expect(usage.keys == keyConfigs.count)
        let (_, metrics) = try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil)
        let gauge = String(decoding: metrics, as: UTF8.self).split(separator: "\n")
            .first { $0.hasPrefix("callveil_evaluation_keys_stored ") }?.split(separator: " ").last.flatMap { Double($0) }
        #expect(gauge == Double(keyConfigs.count))
        await server.stop()
    }
}
