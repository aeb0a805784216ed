import CZeroMQ

/// A ZeroMQ context: the I/O threads shared by sockets. Thread-safe by ZeroMQ's contract.
public final class ZMQContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    /// A new context.
    public init() throws {
        guard let handle = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        self.handle = handle
    }

    /// Makes blocking calls on every socket of this context fail with ETERM, so their threads can exit.
    public func shutdown() {
        zmq_ctx_shutdown(handle)
    }

    deinit {
        zmq_ctx_term(handle)
    }

    /// Whether the library supports a capability (`curve`, `ipc`, …).
    public static func has(_ capability: String) -> Bool { zmq_has(capability) != 0 }
}
