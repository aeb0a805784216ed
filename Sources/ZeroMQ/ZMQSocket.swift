import CZeroMQ

/// A ZeroMQ socket. ZeroMQ sockets are not thread-safe: a socket is created, used and closed by exactly one
/// thread, so this type is deliberately not `Sendable`.
public final class ZMQSocket {
    /// Socket types used by CallVeil.
    public enum Kind: Int32, Sendable {
        /// Request/reply server side (used by the ZAP handler).
        case rep = 4
        /// Asynchronous client: the worker side.
        case dealer = 5
        /// Addressed server: the coordinator side.
        case router = 6
        /// One-to-one (tests and wake-ups).
        case pair = 0
    }

    let handle: UnsafeMutableRawPointer
    private var closed = false

    /// A socket of `kind` in `context`.
    public init(context: ZMQContext, kind: Kind) throws {
        guard let handle = zmq_socket(context.handle, kind.rawValue) else { throw ZMQError.last("zmq_socket") }
        self.handle = handle
        try set(ZMQ_LINGER, 0)
    }

    deinit { close() }

    /// Closes the socket (idempotent).
    public func close() {
        if !closed {
            closed = true
            zmq_close(handle)
        }
    }

    /// Binds to an endpoint (`tcp://*:5555`, `inproc://name`).
    public func bind(_ endpoint: String) throws {
        guard zmq_bind(handle, endpoint) == 0 else { throw ZMQError.last("bind \(endpoint)") }
    }

    /// Connects to an endpoint.
    public func connect(_ endpoint: String) throws {
        guard zmq_connect(handle, endpoint) == 0 else { throw ZMQError.last("connect \(endpoint)") }
    }

    /// The endpoint last bound (resolves `tcp://*:0` to the port chosen).
    public var lastEndpoint: String {
        var buffer = [CChar](repeating: 0, count: 256)
        var size = buffer.count
        _ = zmq_getsockopt(handle, ZMQ_LAST_ENDPOINT, &buffer, &size)
        return cString(buffer)
    }

    /// Sets an integer option.
    public func set(_ option: Int32, _ value: Int32) throws {
        var v = value
        guard zmq_setsockopt(handle, option, &v, MemoryLayout<Int32>.size) == 0 else { throw ZMQError.last("setsockopt \(option)") }
    }

    /// Sets a 64-bit integer option.
    public func set(_ option: Int32, int64 value: Int64) throws {
        var v = value
        guard zmq_setsockopt(handle, option, &v, MemoryLayout<Int64>.size) == 0 else { throw ZMQError.last("setsockopt \(option)") }
    }

    /// Sets a byte-string option.
    public func set(_ option: Int32, bytes: [UInt8]) throws {
        let status = bytes.withUnsafeBytes { zmq_setsockopt(handle, option, $0.baseAddress, $0.count) }
        guard status == 0 else { throw ZMQError.last("setsockopt \(option)") }
    }

    /// Caps the size of an inbound message: a peer sending more is disconnected by ZeroMQ before the bytes reach
    /// the application.
    public func setMaxMessageSize(_ bytes: Int) throws {
        try set(ZMQ_MAXMSGSIZE, int64: Int64(bytes))
    }

    /// Sets a string option (without its terminating zero).
    public func set(_ option: Int32, string: String) throws {
        try set(option, bytes: Array(string.utf8))
    }

    /// Sends a multipart message. With `dontWait`, throws a `wouldBlock` error instead of blocking.
    public func send(_ frames: [[UInt8]], dontWait: Bool = false) throws {
        precondition(!frames.isEmpty, "a message has at least one frame")
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = dontWait ? ZMQ_DONTWAIT : 0
            if index < frames.count - 1 { flags |= ZMQ_SNDMORE }
            let sent = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
            guard sent >= 0 else { throw ZMQError.last("send") }
        }
    }

    /// Receives a multipart message; nil when `dontWait` and nothing is ready.
    public func receive(dontWait: Bool = false) throws -> [[UInt8]]? {
        try receiveWithPeer(dontWait: dontWait)?.frames
    }

    /// Receives a multipart message with where it came from (its connection's ZAP user id and descriptor); nil
    /// when `dontWait` and nothing is ready.
    public func receiveWithPeer(dontWait: Bool = false) throws -> (frames: [[UInt8]], peer: ZMQPeer)? {
        var frames: [[UInt8]] = []
        var peer = ZMQPeer()
        repeat {
            var message = zmq_msg_t()
            zmq_msg_init(&message)
            defer { zmq_msg_close(&message) }
            let size = zmq_msg_recv(&message, handle, dontWait ? ZMQ_DONTWAIT : 0)
            if size < 0 {
                let error = ZMQError.last("receive")
                if error.wouldBlock && frames.isEmpty { return nil }
                throw error
            }
            // A router's first frame (the routing id) is made locally and carries no metadata: read each frame's.
            if peer.userID == nil, let value = zmq_msg_gets(&message, "User-Id") {
                let text = String(cString: value)
                peer.userID = text.isEmpty ? nil : text
            }
            if peer.descriptor == nil {
                let descriptor = zmq_msg_get(&message, ZMQ_SRCFD)  // -1 over inproc and on locally made frames
                peer.descriptor = descriptor >= 0 ? descriptor : nil
            }
            let data = zmq_msg_data(&message)
            frames.append(size == 0 ? [] : Array(UnsafeRawBufferPointer(start: data, count: Int(size))))
        } while receiveMore
        return (frames, peer)
    }

    private var receiveMore: Bool {
        var more: Int32 = 0
        var size = MemoryLayout<Int32>.size
        zmq_getsockopt(handle, ZMQ_RCVMORE, &more, &size)
        return more != 0
    }

    /// Waits until one of `sockets` is readable or one of `descriptors` (file descriptors) is readable, for at
    /// most `timeoutMilliseconds` (-1: forever). Returns the readable flags, sockets first.
    public static func poll(_ sockets: [ZMQSocket], descriptors: [Int32] = [], timeoutMilliseconds: Int) throws -> [Bool] {
        var items = sockets.map { zmq_pollitem_t(socket: $0.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0) }
        items += descriptors.map { zmq_pollitem_t(socket: nil, fd: $0, events: Int16(ZMQ_POLLIN), revents: 0) }
        let count = items.count
        let status = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, Int32(count), timeoutMilliseconds) }
        guard status >= 0 else { throw ZMQError.last("poll") }
        return items.map { $0.revents & Int16(ZMQ_POLLIN) != 0 }
    }
}

/// The text of a zero-terminated C buffer.
func cString(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
