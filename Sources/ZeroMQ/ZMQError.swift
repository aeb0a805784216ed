import CZeroMQ

/// A ZeroMQ call failed; `code` is the errno ZeroMQ reported.
public struct ZMQError: Error, Sendable, CustomStringConvertible {
    /// errno value.
    public let code: Int32
    /// What was being done.
    public let operation: String

    /// An error with an errno value.
    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// The error of the last failed call on this thread.
    static func last(_ operation: String) -> ZMQError {
        ZMQError(code: zmq_errno(), operation: operation)
    }

    public var description: String { "\(operation): \(String(cString: zmq_strerror(code)))" }

    /// The operation would block (no message ready, or the peer's queue is full).
    public var wouldBlock: Bool { code == EAGAIN }
    /// The context was terminated.
    public var terminated: Bool { code == ETERM }
}
