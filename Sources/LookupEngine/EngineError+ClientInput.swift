import BFV
import LookupProtocol
import PIR
import SwiftProtobuf

extension EngineError {
    /// The error for a library error raised by a query's or key's content (a bad ciphertext, a PIR request that
    /// does not fit, a malformed message): `invalidQuery` with the library's reason; the PIR core's failure to map a
    /// query's memory is `overloaded` instead (503 with `Retry-After`: the host, not the request); nil for any other
    /// error.
    public init?(clientInput error: any Error) {
        switch error {
        case let e as HEError: self.init(.invalidQuery, "Invalid ciphertext or key: \(e)")
        case let e as PIRError where e.code == .outOfMemory: self.init(.overloaded, "Server out of memory: \(e)")
        case let e as PIRError: self.init(.invalidQuery, "Invalid PIR request: \(e)")
        case let e as ProtocolError: self.init(.invalidQuery, "Invalid message: \(e)")
        case let e as BinaryDecodingError: self.init(.invalidQuery, "Malformed protobuf: \(e)")
        default: return nil
        }
    }
}
