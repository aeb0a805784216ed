import Foundation
import FuzzSupport
import LookupProtocol
import LookupService

/// `/key` bodies through `LookupAPI.uploadKeys`: metadata, key-config matching, evaluation-key decoding and
/// validation (Galois elements, relinearization key), and the key store.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    // The seed is the upload FuzzQueries recorded (fuzz/fixture/uploads/, given to libFuzzer as a corpus folder).
    Seeds.writeIfRequested { [:] }
    withoutLeakChecks { _ = Fixture.server }
    return 0
}

nonisolated(unsafe) var uploads = 0

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard let message = try? ProtoEvaluationKeys(serializedBytes: input(start, count)) else { return 0 }
    uploads += 1
    let api = Fixture.server.api
    let user = "fuzz-upload-\(uploads % 8)"  // a few users: replaced keys, not an ever-growing store
    _ = blocking { try await api.uploadKeys(message, user: user) }
    return 0
}
