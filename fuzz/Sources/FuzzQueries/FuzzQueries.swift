import Foundation
import FuzzSupport
import LookupProtocol
import LookupService

/// `/queries` bodies through `LookupAPI.queries`: request routing, config ids, shard indices, stored and inline
/// evaluation keys, ciphertext decoding and the PIR computation over the fixture's shards.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    Seeds.writeIfRequested {
        let exchange = try SeedRecorder.record()
        try FileManager.default.createDirectory(atPath: "\(Fixture.committed)/uploads", withIntermediateDirectories: true)
        try Data(exchange.key).write(to: URL(fileURLWithPath: recordedKeyPath))
        return ["blocked": exchange.queries[0], "not-blocked": exchange.queries[1], "absent": exchange.queries[2]]
    }
    // The device's key the seeds were built with, stored for the fixture's user, so stored-key queries compute.
    guard let body = FileManager.default.contents(atPath: recordedKeyPath),
          let keys = try? ProtoEvaluationKeys(serializedBytes: [UInt8](body)) else {
        fatalError("missing \(recordedKeyPath): record the seeds first (fuzz/run.sh seeds)")
    }
    withoutLeakChecks {
        let server = Fixture.server
        _ = try! blocking { try await server.api.uploadKeys(keys, user: Fixture.user) }.get()
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard let message = try? ProtoRequests(serializedBytes: input(start, count)) else { return 0 }
    let api = Fixture.server.api
    _ = blocking { try await api.queries(message, user: Fixture.user) }
    return 0
}
