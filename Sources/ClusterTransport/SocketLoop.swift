import Dispatch
import Foundation
import Synchronization
import ZeroMQ
#if canImport(Glibc)
import Glibc
#endif

/// One ZeroMQ socket driven by its own thread (ZeroMQ sockets are single-threaded): the thread creates and
/// configures the socket, delivers every received message (with its connection's ZAP user id and descriptor) to
/// `onMessage` and, when asked, each closed connection's descriptor to `onDisconnect`, and sends what other
/// threads queue with `send`, woken through a pipe so a send never waits for a poll timeout. Sends never block: a
/// message to a peer that is gone or whose queue is full is dropped, which is why nothing in the cluster depends on
/// one message arriving (the coordinator reconciles on every heartbeat).
public final class SocketLoop: Sendable {
    /// What the loop object and its thread share. It owns the wake pipe and closes both ends only when both have
    /// let go of it: a thread still polling a descriptor its owner had closed would poll, and drain, whatever the
    /// process opened next under that number (another library's socket).
    private final class Shared: Sendable {
        let outbox = Mutex<[[[UInt8]]]>([])
        let stopping = Mutex(false)
        let wakeDescriptor: Int32  // write end of the wake pipe
        let readDescriptor: Int32

        init() throws {
            var pipeEnds: [Int32] = [0, 0]
            guard pipe(&pipeEnds) == 0 else { throw ZMQError(code: errno, operation: "pipe") }
            for end in pipeEnds {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
            readDescriptor = pipeEnds[0]
            wakeDescriptor = pipeEnds[1]
        }

        deinit {
            close(readDescriptor)
            close(wakeDescriptor)
        }

        /// Marks the loop stopping; true if it was running.
        func markStopping() -> Bool {
            stopping.withLock { stopped in
                defer { stopped = true }
                return !stopped
            }
        }

        /// Wakes the loop thread from its poll.
        func wake() {
            var one: UInt8 = 1
            _ = write(wakeDescriptor, &one, 1)
        }
    }

    private let shared: Shared
    private let finished = DispatchSemaphore(value: 0)
    /// The endpoint the setup bound or connected to (a bound `tcp://…:0` resolved to its port).
    public let endpoint: String

    /// Starts the loop: `setup` configures the new socket (options, CURVE, bind or connect) on the loop thread
    /// and returns its endpoint; `onMessage` runs on the loop thread for each message, and `onDisconnect` for each
    /// connection that closed (from a socket monitor); neither may block.
    public init(context: ZMQContext, kind: ZMQSocket.Kind, name: String,
                setup: @escaping @Sendable (ZMQSocket) throws -> String,
                onMessage: @escaping @Sendable ([[UInt8]], ZMQPeer) -> Void,
                onDisconnect: (@Sendable (Int32) -> Void)? = nil) throws {
        let shared = try Shared()
        self.shared = shared
        let started = DispatchSemaphore(value: 0)
        let result = Mutex<Result<String, any Error>?>(nil)
        let thread = Thread { [shared, finished] in
            Self.nameKernelThread(name)
            let socket: ZMQSocket
            var monitor: ZMQSocket?
            do {
                socket = try ZMQSocket(context: context, kind: kind)
                let endpoint = try setup(socket)
                if onDisconnect != nil {
                    // Unique per loop: the inproc namespace is the context's.
                    let address = "inproc://socket-loop-monitor-\(UInt64.random(in: 1...UInt64.max))"
                    try socket.monitor(address, events: ZMQSocket.MonitorEvent.disconnected)
                    let events = try ZMQSocket(context: context, kind: .pair)
                    try events.connect(address)
                    monitor = events
                }
                result.withLock { $0 = .success(endpoint) }
            } catch {
                result.withLock { $0 = .failure(error) }
                started.signal()
                finished.signal()
                return
            }
            started.signal()
            Self.run(socket: socket, monitor: monitor, shared: shared, onMessage: onMessage, onDisconnect: onDisconnect)
            monitor?.close()
            socket.close()
            finished.signal()
        }
        thread.name = name
        thread.start()
        started.wait()
        switch result.withLock({ $0 }) {
        case .success(let endpoint)?: self.endpoint = endpoint
        case .failure(let error)?: throw error
        case nil: throw ZMQError(code: EINVAL, operation: "socket loop did not start")
        }
    }

    /// A loop released without `stop` stops too: its thread closes the socket and exits at its next wake.
    deinit {
        if shared.markStopping() { shared.wake() }
    }

    /// Gives the calling thread `name` where `top -H`, `ps -L` and crash reports read it (its first 15 bytes):
    /// Foundation keeps a thread's name to itself on Linux, and Glibc's `pthread_setname_np` is not imported.
    private static func nameKernelThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Queues a message for sending from the loop thread.
    public func send(_ frames: [[UInt8]]) {
        shared.outbox.withLock { $0.append(frames) }
        shared.wake()
    }

    /// Stops the loop and closes the socket; waits for the thread.
    public func stop() {
        guard shared.markStopping() else { return }
        shared.wake()
        finished.wait()
    }

    private static func run(socket: ZMQSocket, monitor: ZMQSocket?, shared: Shared,
                            onMessage: @Sendable ([[UInt8]], ZMQPeer) -> Void, onDisconnect: (@Sendable (Int32) -> Void)?) {
        let wake = shared.readDescriptor
        let sockets = [socket] + (monitor.map { [$0] } ?? [])
        while !shared.stopping.withLock({ $0 }) {
            let ready: [Bool]
            do { ready = try ZMQSocket.poll(sockets, descriptors: [wake], timeoutMilliseconds: 250) } catch let error as ZMQError where error.code == EINTR {
                continue  // a signal: poll again
            } catch {
                return  // the context terminated or the socket is gone
            }
            if ready[sockets.count] {
                var drain = [UInt8](repeating: 0, count: 256)
                while read(wake, &drain, drain.count) > 0 {}
            }
            let pending = shared.outbox.withLock { queue in
                defer { queue.removeAll() }
                return queue
            }
            for frames in pending {
                // A message to a peer that is gone (or a full queue) is dropped; the requester times out and retries.
                try? socket.send(frames, dontWait: true)
            }
            if ready[0] {
                while let message = try? socket.receiveWithPeer(dontWait: true) { onMessage(message.frames, message.peer) }
            }
            if let monitor, ready[1] {
                while let frames = try? monitor.receive(dontWait: true) {
                    if let event = ZMQSocket.MonitorEvent(frames: frames), event.event == ZMQSocket.MonitorEvent.disconnected {
                        onDisconnect?(event.value)
                    }
                }
            }
        }
    }
}
