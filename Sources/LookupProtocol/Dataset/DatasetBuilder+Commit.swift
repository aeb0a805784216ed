import BFV
import Foundation
import PIR

extension DatasetBuilder {
    /// Moves the staged files into the output folder, writes the key config and, last, the manifest; then
    /// deletes files of shard indices the new version no longer has.
    func commit(_ built: [Built], bucketBytes: Int, maxValueLength: Int, staging: String, input: DatasetManifest.Input?,
                delta: DatasetManifest.Input?, previous: Previous?, context: Context) throws -> DatasetManifest {
        let engine = try options.processingOptions()
        let configuration: UseCaseConfiguration
        do {
            configuration = try UseCaseConfiguration(shardParameters: built.map(\.parameters))
        } catch {
            throw DatasetError.processing("the shards do not form a use case: \(error)")
        }
        let galois = Set(built.flatMap(\.shard.galoisElements))
        let union = EvaluationKeyConfig(galoisElements: galois.sorted(), hasRelinearizationKey: true)
        let keyConfigBytes = Array(EvaluationKeyConfigMessage(union, parameters: engine.encryption).textFormatString().utf8)
        let keyConfigName = "\(stem).evaluation-key-config.txtpb"
        try Self.writeSynced(keyConfigBytes, to: "\(staging)/\(keyConfigName)")
        let keyConfigDigest = FileDigest.of(bytes: keyConfigBytes)
        let previousDigest = try previous.map { try FileDigest.of(path: "\($0.directory)/\(DatasetManifest.fileName(stem: $0.manifest.stem))").sha256 }
        let manifest = DatasetManifest(
            format: DatasetManifest.currentFormat, useCase: useCase ?? previous?.manifest.useCase, stem: stem,
            configID: configuration.configID.hexString, options: options, bucketBytes: bucketBytes, maxValueLength: maxValueLength,
            rows: built.reduce(0) { $0 + $1.shard.rows }, input: input, delta: delta, previousManifestSHA256: previousDigest,
            keyConfig: .init(path: keyConfigName, bytes: keyConfigDigest.bytes, sha256: keyConfigDigest.sha256),
            shards: built.map(\.shard))
        for file in manifest.files where FileManager.default.fileExists(atPath: "\(staging)/\(file.path)") {
            guard rename("\(staging)/\(file.path)", "\(directory)/\(file.path)") == 0 else {
                throw DatasetError.unreadable(path: "\(directory)/\(file.path)", why: "cannot move into place (errno \(errno))")
            }
        }
        try manifest.write(path: "\(directory)/\(DatasetManifest.fileName(stem: stem))")
        try AtomicFile.sync(path: directory)
        removeStaleShards(from: built.count)
        return manifest
    }

    /// Deletes `<stem>-<k>.*` shard files for `k ≥ count` (left by an earlier version with more shards).
    func removeStaleShards(from count: Int) {
        let prefix = "\(stem)-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            guard let dot = rest.firstIndex(of: "."), let k = Int(rest[..<dot]), k >= count else { continue }
            let suffix = rest[dot...]
            guard [".cvshard", ".params.txtpb", ".params.binpb", ".rows", ".bin"].contains(String(suffix)) else { continue }
            try? FileManager.default.removeItem(atPath: "\(directory)/\(name)")
        }
    }
}
