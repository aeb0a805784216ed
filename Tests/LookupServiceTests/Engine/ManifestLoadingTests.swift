import Dataset
import Foundation
import LookupEngine
import LookupProtocol
import LookupService
import PIR
import ServiceTestSupport
import Testing

/// Loading a use case through its dataset manifest: the same version as the file stem gives, and a file that
/// does not match its recorded SHA-256 is refused with the file named.
@Suite("Loading versions through manifests")
struct ManifestLoadingTests {
    @Test("a manifest loads the version; a changed shard file is refused")
    func loadAndRefuseTampering() throws {
        let root = NSTemporaryDirectory() + "callveil-manifest-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let csv = "keyword,value\n" + (0..<600).map { "+1415555\(String(format: "%04d", $0)),\(String(format: "%02x", $0 % 2))\n" }.joined()
        try csv.write(toFile: "\(root)/block.csv", atomically: true, encoding: .utf8)
        let options = DatasetManifest.Options(preset: "n_4096_logq_27_28_28_logt_5", shardCount: 2)
        let manifest = try DatasetBuilder(options: options, directory: "\(root)/v", stem: "block").build(input: "\(root)/block.csv").manifest

        let viaManifest = try UseCaseLoader.load(.init(name: "block", manifest: "\(root)/v/block.manifest.json"))
        let viaStem = try UseCaseLoader.load(.init(name: "block", fileStem: "\(root)/v/block"))
        #expect(viaManifest.version.configuration.configID.hexString == manifest.configID)
        #expect(viaManifest.version.configIDHex == viaStem.version.configIDHex)
        // One parameter set, one context in the process: its tables take megabytes, and every use case, version and
        // shard of those parameters would otherwise build its own.
        #expect(viaManifest.version.context === viaStem.version.context)
        #expect(try viaManifest.shards.map { try $0.load().tables } == viaStem.shards.map { try $0.load().tables })
        // A coordinator names the shard file's content by the manifest's hash, checked as the file was read, instead
        // of hashing it again: it must be the bytes' SHA-256.
        let named = try viaManifest.shards[0].shardFile(parameterBlob: [], context: viaManifest.version.context)
        #expect(named.sha256?.hexString == FileDigest.of(bytes: named.bytes).sha256)
        #expect(named.sha256?.hexString == manifest.shards[0].shard.sha256)

        let path = "\(root)/v/\(manifest.shards[1].shard.path)"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count - 1] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        // The shard is checked as it is read (once, when installed), so loading the configuration still works.
        let tampered = try UseCaseLoader.load(.init(name: "block", manifest: "\(root)/v/block.manifest.json"))
        _ = try tampered.shards[0].load()
        #expect {
            try tampered.shards[1].load()
        } throws: { error in
            "\(error)".contains(manifest.shards[1].shard.path) && "\(error)".contains("SHA-256")
        }
    }

    @Test("a new version whose shard fails its checksum while it installs: reload reports it, the old version keeps answering")
    func failedInstallKeepsPrevious() async throws {
        let root = try temporaryDirectory()
        func csv(flipped: Bool) -> String {
            "keyword,value\n" + (0..<400).map { "+1415555\(String(format: "%04d", $0)),\($0 % 2 == (flipped ? 1 : 0) ? "01" : "00")\n" }.joined()
        }
        func build(_ version: String, shards: Int, flipped: Bool) throws -> String {
            try csv(flipped: flipped).write(toFile: "\(root)/\(version).csv", atomically: true, encoding: .utf8)
            let options = DatasetManifest.Options(preset: "n_4096_logq_27_28_28_logt_5", shardCount: shards)
            _ = try DatasetBuilder(options: options, directory: "\(root)/\(version)", stem: "block").build(input: "\(root)/\(version).csv")
            return "\(root)/\(version)/block.manifest.json"
        }
        let first = try build("v1", shards: 2, flipped: false)
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: root, usecases: [.init(name: "block", manifest: first)]))
        let before = try #require(server.server.registry.newest("block")).configIDHex
        let device = server.device()
        let numbers = ["+14155550001", "+14155550002", "+14155550399"]
        func answers() async throws -> [[UInt8]] {
            var out: [[UInt8]] = []
            for number in numbers { out.append(try await device.lookup(Array(number.utf8), in: "block") ?? []) }
            return out
        }
        #expect(try await answers() == [[0], [1], [0]])
        // Version 2 (three shards: a new config id, flipped values) with its last shard damaged after the build.
        let second = try build("v2", shards: 3, flipped: true)
        let damaged = "\(root)/v2/\(try DatasetManifest.read(path: second).shards[2].shard.path)"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: damaged)))
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        _ = try writeServiceConfig(in: root, usecases: [.init(name: "block", manifest: second)])
        #expect(try await server.server.reload() == ["block"])
        #expect(try #require(server.server.registry.newest("block")).configIDHex == before)
        #expect(try await answers() == [[0], [1], [0]])
        let executor = try #require(server.server.executor as? LocalShardExecutor)
        let rejected = try UseCaseLoader.load(.init(name: "block", manifest: second)).version.configuration.configID
        #expect(!executor.holds(useCase: "block", configID: rejected, index: 0), "the shards installed before the failure are removed")
        // The failed reload is visible: /readyz 503 naming the use case, the reload metrics; /healthz still alive.
        let (readyStatus, ready) = try await server.admin.send(method: .GET, path: "/readyz", headers: [], body: nil)
        #expect(readyStatus == 503)
        #expect(String(decoding: ready, as: UTF8.self).contains("\"failedUseCases\":[\"block\"]"))
        #expect(try await server.admin.send(method: .GET, path: "/healthz", headers: [], body: nil).status == 200)
        let metrics = String(decoding: try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil).body, as: UTF8.self)
        #expect(metrics.contains("callveil_config_last_reload_successful 0"))
        #expect(metrics.contains("callveil_config_reloads_total{result=\"failure\"} 1"))
        // The config fixed: ready again.
        _ = try writeServiceConfig(in: root, usecases: [.init(name: "block", manifest: first)])
        #expect(try await server.server.reload() == [])
        #expect(try await server.admin.send(method: .GET, path: "/readyz", headers: [], body: nil).status == 200)
        await server.stop()
    }
}
