import BFV
import Dataset
import Foundation
import LookupProtocol
import PIR
import SwiftProtobuf

/// A use case read from disk: its configuration (parsed and checked) and a source per shard that reads the
/// shard's processed database when it is installed.
public struct LoadedUseCase: Sendable {
    /// The version to register.
    public let version: UseCaseVersion
    /// One source per shard, in index order.
    public let shards: [ShardSource]

    /// A loaded version.
    public init(version: UseCaseVersion, shards: [ShardSource]) {
        self.version = version
        self.shards = shards
    }
}

/// Reads a use case's parameter files (`.params.txtpb` or `.params.binpb`), checking that all shards share
/// encryption parameters, and gives a source per shard file (CallVeil `.cvshard` or the reference's `.bin`) that
/// reads it when installed; a manifest's files are checked for presence and size first, and each against its
/// SHA-256 as it is read.
public enum UseCaseLoader {
    /// Loads use case `name`'s configuration and the sources of its shards, from a manifest or from the files
    /// `<fileStem>-<i>.*` (`shardCount` of them, or as many as there are).
    public static func load(name: String, fileStem: String?, shardCount: Int?, manifest: String?) throws -> LoadedUseCase {
        if let manifest { return try load(name: name, manifest: manifest) }
        guard let stem = fileStem else { throw ConfigError("\(name): give fileStem or manifest") }
        // A stem with a manifest (the output of `process-db`, whose files are named after their contents) loads
        // through it; without one, `<stem>-<i>.*` are read directly (the reference's and older outputs).
        let manifest = "\(stem).manifest.json"
        if shardCount == nil, FileManager.default.fileExists(atPath: manifest) { return try load(name: name, manifest: manifest) }
        let count = try shardCount ?? countShards(stem: stem)
        let parameters = try (0..<count).map { try readParameters(stem: stem, shard: $0) }
        let configuration = try UseCaseConfiguration(shardParameters: parameters)
        let context = try Context.shared(parameters: configuration.encryption)
        for index in 0..<count where !FileManager.default.fileExists(atPath: "\(stem)-\(index).cvshard")
            && !FileManager.default.fileExists(atPath: "\(stem)-\(index).bin") {
            throw ConfigError("\(name): no shard file \(stem)-\(index).cvshard or .bin")
        }
        let shards = configuration.shards.enumerated().map { index, shard in
            ShardSource(index: index, read: { try readDatabase(stem: stem, shard: index, parameters: shard, context: context) }, file: {
                let ours = "\(stem)-\(index).cvshard"
                guard FileManager.default.fileExists(atPath: ours) else { return nil }
                do {
                    return try versionTwo([UInt8](try Data(contentsOf: URL(fileURLWithPath: ours))), parameters: shard, context: context)
                } catch {
                    throw ConfigError("cannot load shard \(index) (\(ours)): \(error)")
                }
            })
        }
        return LoadedUseCase(version: UseCaseVersion(name: name, configuration: configuration, context: context), shards: shards)
    }

    /// Loads the version a dataset manifest describes: the parameter files are checked against their SHA-256 now,
    /// the shard files for presence and size now and against their SHA-256 when read.
    public static func load(name: String, manifest path: String) throws -> LoadedUseCase {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let manifest: DatasetManifest
        let parameters: [ProtoPirParameters]
        do {
            manifest = try DatasetManifest.read(path: path)
            parameters = try manifest.shards.map { shard in
                let text = String(decoding: try DatasetManifest.contents(of: shard.parameters, directory: directory), as: UTF8.self)
                return try ProtoPirParameters(textFormatString: text)
            }
            for shard in manifest.shards { try DatasetManifest.checkSize(shard.shard, directory: directory) }
        } catch {
            throw ConfigError("\(name): cannot load \(path): \(error)")
        }
        let configuration = try UseCaseConfiguration(shardParameters: parameters)
        guard configuration.configID.hexString == manifest.configID else {
            throw ConfigError("\(name): the shards' config id differs from the one \(path) records")
        }
        let context = try Context.shared(parameters: configuration.encryption)
        let shards = zip(manifest.shards, configuration.shards).map { shard, shardParameters in
            @Sendable func failure(_ error: any Error) -> ConfigError {
                ConfigError("\(name): cannot load shard \(shard.index) of \(path): \(error)")
            }
            return ShardSource(index: shard.index, read: {
                do {
                    return try ProcessedDatabase(shardFile: try DatasetManifest.contents(of: shard.shard, directory: directory),
                                                 parameters: shardParameters, context: context)
                } catch {
                    throw failure(error)
                }
            }, file: {
                do {
                    return try versionTwo(try DatasetManifest.contents(of: shard.shard, directory: directory), parameters: shardParameters,
                                          context: context)
                } catch {
                    throw failure(error)
                }
            }, fileSHA256: shard.shard.sha256Bytes)
        }
        return LoadedUseCase(version: UseCaseVersion(name: name, configuration: configuration, context: context), shards: shards)
    }

    /// A shard file's bytes when it is version 2, after checking its layout and digest against the shard's
    /// parameters; nil for a version-1 file.
    static func versionTwo(_ bytes: [UInt8], parameters: MulPirParameters, context: Context) throws -> [UInt8]? {
        guard let shape = try ShardFile.versionTwoShape(bytes, context: context) else { return nil }
        try ProcessedDatabase.checkTableCount(shape.tables, parameters: parameters)
        try ProcessedDatabase.checkSlotCount(shape.slots, parameters: parameters)
        return bytes
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
                return try ProcessedDatabase(shardFile: [UInt8](try Data(contentsOf: URL(fileURLWithPath: ours))), parameters: parameters,
                                             context: context)
            }
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: reference)))
            return try ProcessedDatabase(referenceFormat: bytes, parameters: parameters, context: context)
        } catch {
            throw ConfigError("cannot load shard \(shard) (\(ours) or \(reference)): \(error)")
        }
    }
}
