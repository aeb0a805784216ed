import BFV
import Foundation
import LookupProtocol
import PIR
import SwiftProtobuf

/// A use case read from disk: its configuration and each shard's processed database.
public struct LoadedUseCase: Sendable {
    /// The version to register.
    public let version: UseCaseVersion
    /// Processed database per shard index.
    public let databases: [ProcessedDatabase]
}

/// Reads a use case's shard files (CallVeil `.cvshard` or the reference's `.bin`) and parameter files
/// (`.params.txtpb` or `.params.binpb`), checking that all shards share encryption parameters.
public enum UseCaseLoader {
    /// Loads every shard of `useCase`; `progress` is called after each shard with (done, total).
    public static func load(_ useCase: ServiceConfig.UseCase, progress: (Int, Int) -> Void = { _, _ in }) throws -> LoadedUseCase {
        if let manifest = useCase.manifest { return try load(name: useCase.name, manifest: manifest, progress: progress) }
        guard let stem = useCase.fileStem else { throw ConfigError("\(useCase.name): give fileStem or manifest") }
        let count = try useCase.shardCount ?? countShards(stem: stem)
        let parameters = try (0..<count).map { try readParameters(stem: stem, shard: $0) }
        let configuration = try UseCaseConfiguration(shardParameters: parameters)
        let context = try Context(parameters: configuration.encryption)
        var databases: [ProcessedDatabase] = []
        for (index, shard) in configuration.shards.enumerated() {
            databases.append(try readDatabase(stem: stem, shard: index, parameters: shard, context: context))
            progress(index + 1, count)
        }
        return LoadedUseCase(version: UseCaseVersion(name: useCase.name, configuration: configuration, context: context),
                             databases: databases)
    }

    /// Loads the version a dataset manifest describes, checking every file's size and SHA-256 first.
    public static func load(name: String, manifest path: String, progress: (Int, Int) -> Void = { _, _ in }) throws -> LoadedUseCase {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let manifest: DatasetManifest
        let parameters: [ProtoPirParameters]
        do {
            manifest = try DatasetManifest.read(path: path)
            parameters = try manifest.shards.map { shard in
                let text = String(decoding: try DatasetManifest.contents(of: shard.parameters, directory: directory), as: UTF8.self)
                return try ProtoPirParameters(textFormatString: text)
            }
        } catch {
            throw ConfigError("\(name): cannot load \(path): \(error)")
        }
        let configuration = try UseCaseConfiguration(shardParameters: parameters)
        guard configuration.configID.hexString == manifest.configID else {
            throw ConfigError("\(name): the shards' config id differs from the one \(path) records")
        }
        let context = try Context(parameters: configuration.encryption)
        var databases: [ProcessedDatabase] = []
        for (shard, shardParameters) in zip(manifest.shards, configuration.shards) {
            do {
                let contents = try ShardFile.deserialize(try DatasetManifest.contents(of: shard.shard, directory: directory), context: context)
                databases.append(try ProcessedDatabase(parameters: shardParameters, tables: contents.tables, context: context))
            } catch {
                throw ConfigError("\(name): cannot load shard \(shard.index) of \(path): \(error)")
            }
            progress(shard.index + 1, manifest.shards.count)
        }
        return LoadedUseCase(version: UseCaseVersion(name: name, configuration: configuration, context: context), databases: databases)
    }

    static func countShards(stem: String) throws -> Int {
        var count = 0
        while FileManager.default.fileExists(atPath: "\(stem)-\(count).params.txtpb")
                || FileManager.default.fileExists(atPath: "\(stem)-\(count).params.binpb") {
            count += 1
        }
        guard count > 0 else { throw ConfigError("no shard parameter files \(stem)-0.params.txtpb") }
        return count
    }

    static func readParameters(stem: String, shard: Int) throws -> ProtoPirParameters {
        let text = "\(stem)-\(shard).params.txtpb"
        let binary = "\(stem)-\(shard).params.binpb"
        do {
            if FileManager.default.fileExists(atPath: text) {
                return try ProtoPirParameters(textFormatString: String(decoding: try Data(contentsOf: URL(fileURLWithPath: text)), as: UTF8.self))
            }
            return try ProtoPirParameters(serializedBytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: binary))))
        } catch {
            throw ConfigError("cannot read the parameters of shard \(shard) (\(text)): \(error)")
        }
    }

    static func readDatabase(stem: String, shard: Int, parameters: MulPirParameters, context: Context) throws -> ProcessedDatabase {
        let ours = "\(stem)-\(shard).cvshard"
        let reference = "\(stem)-\(shard).bin"
        do {
            if FileManager.default.fileExists(atPath: ours) {
                let contents = try ShardFile.deserialize([UInt8](try Data(contentsOf: URL(fileURLWithPath: ours))), context: context)
                return try ProcessedDatabase(parameters: parameters, tables: contents.tables, context: context)
            }
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: reference)))
            return try ProcessedDatabase(referenceFormat: bytes, parameters: parameters, context: context)
        } catch {
            throw ConfigError("cannot load shard \(shard) (\(ours) or \(reference)): \(error)")
        }
    }
}
