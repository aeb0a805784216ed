import Foundation
import LookupProtocol
import LookupService
import PIR
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
        #expect(try viaManifest.shards.map { try $0.load().tables } == viaStem.shards.map { try $0.load().tables })

        let path = "\(root)/v/block-1.cvshard"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count - 1] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        // The shard is checked as it is read (once, when installed), so loading the configuration still works.
        let tampered = try UseCaseLoader.load(.init(name: "block", manifest: "\(root)/v/block.manifest.json"))
        _ = try tampered.shards[0].load()
        #expect {
            try tampered.shards[1].load()
        } throws: { error in
            "\(error)".contains("block-1.cvshard") && "\(error)".contains("SHA-256")
        }
    }
}
