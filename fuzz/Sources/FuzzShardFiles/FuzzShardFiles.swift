import BFV
import Foundation
import FuzzSupport
import LookupService
import LZ4
import LookupEngine
import PIR
import ServiceCore

/// Shard bytes from disk or from the network; the first byte picks the reader. 0: an LZ4 frame in one piece;
/// 1: an LZ4 frame streamed in three pieces (how transfer chunks arrive); 2: a `.cvshard` file; 3: a reference
/// `.bin` shard; 4: a shard file as a worker receives it (parsed and rebuilt in evaluation form against the assigned
/// parameters). Parameters and context are the fixture's shard 0.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    Seeds.writeIfRequested {
        _ = shard  // the fixture's files exist from here on
        let loaded = try UseCaseLoader.load(.init(name: Fixture.useCase, fileStem: Fixture.fileStem))
        let file = try loaded.shards[0].shardFile(parameterBlob: [], context: shard.context)
        let frame = try LZ4Frame.compress(file)
        let cvshard = [UInt8](FileManager.default.contents(atPath: "\(Fixture.fileStem)-0.cvshard") ?? Data())
        return ["lz4-shard-file": [0] + frame, "lz4-streamed": [1] + frame, "cvshard": [2] + cvshard,
                "transferred-shard": [4] + file]
    }
    withoutLeakChecks { _ = shard }
    return 0
}

let shard: (parameters: MulPirParameters, context: Context) = {
    let version = Fixture.server.registry.newest(Fixture.useCase)!
    return (version.configuration.shards[0], version.context)
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = input(start, count)
    guard let selector = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    switch selector % 5 {
    case 0:
        _ = try? LZ4Frame.decompress(rest, limit: 8 << 20)
    case 1:
        guard var decoder = try? LZ4FrameDecoder(limit: 8 << 20) else { return 0 }
        let cuts = [0, rest.count / 3, 2 * rest.count / 3, rest.count]
        for i in 0..<3 {
            guard (try? decoder.feed(Array(rest[cuts[i]..<cuts[i + 1]]))) != nil else { break }
        }
    case 2:
        _ = try? ShardFile.deserialize(rest, context: shard.context)
    case 3:
        _ = try? ProcessedDatabase(referenceFormat: rest, parameters: shard.parameters, context: shard.context)
    default:
        guard let contents = try? ShardFile.deserialize(rest, context: shard.context) else { return 0 }
        _ = try? ProcessedDatabase(parameters: shard.parameters, tables: contents.tables, context: shard.context)
    }
    return 0
}
