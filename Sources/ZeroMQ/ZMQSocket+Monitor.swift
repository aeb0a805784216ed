import CZeroMQ

extension ZMQSocket {
    /// A connection event a socket monitor reported: which event (`ZMQ_EVENT_*`) and its value (for connect,
    /// accept and disconnect events, the connection's descriptor).
    public struct MonitorEvent: Sendable, Equatable {
        public let event: Int32
        public let value: Int32

        /// The connection closed: the peer went away, reset it, or broke the protocol.
        public static let disconnected = Int32(ZMQ_EVENT_DISCONNECTED)

        /// Reads a monitor message: a 6-byte frame (event, value; native byte order) and the endpoint's frame.
        /// Nil for anything else.
        public init?(frames: [[UInt8]]) {
            guard frames.count == 2, frames[0].count == 6 else { return nil }
            let head = frames[0]
            event = Int32(UInt16(head[0]) | UInt16(head[1]) << 8)
            value = Int32(bitPattern: UInt32(head[2]) | UInt32(head[3]) << 8 | UInt32(head[4]) << 16 | UInt32(head[5]) << 24)
        }
    }

    /// Publishes this socket's `events` (a mask of `MonitorEvent` kinds) on the `inproc://` endpoint, where a
    /// pair socket connected to it reads them; the monitor stops when this socket closes.
    public func monitor(_ endpoint: String, events: Int32) throws {
        guard zmq_socket_monitor(handle, endpoint, events) == 0 else { throw ZMQError.last("monitor \(endpoint)") }
    }
}
