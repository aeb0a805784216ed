import Dispatch
import Foundation
import Synchronization
import ZeroMQ
#if canImport(Glibc)
import Glibc
#endif

/// One ZeroMQ socket driven by its own thread (ZeroMQ sockets are single-threaded): the thread creates and
/// configures the socket, delivers every received message (with the ZAP user id of its connection, if any) to
/// `onMessage`, and sends what other threads queue with `send`, woken through a pipe so a send never waits for a
/// poll timeout. Sends never block: a message to a peer that is gone or whose queue is full is dropped, which is
/// why nothing in the cluster depends on one message arriving (the coordinator reconciles on every heartbeat).
public final class SocketLoop: Sendable {
    private final class Shared: Sendable {
        let outbox = Mutex<[[[UInt8]]]>([])
        let stopping = Mutex(false)
    }

    private let shared = Shared()
    private let wakeDescriptor: Int32  // write end of the wake pipe
    private let readDescriptor: Int32
    private let finished = DispatchSemaphore(value: 0)
    /// The endpoint the setup bound or connected to (a bound `tcp://…:0` resolved to its port).
    public let endpoint: String

    /// Starts the loop: `setup` configures the new socket (options, CURVE, bind or connect) on the loop thread
    /// and returns its endpoint; `onMessage` runs on the loop thread for each message and must not block.
    public init(context: ZMQContext, kind: ZMQSocket.Kind, name: String,
                setup: @escaping @Sendable (ZMQSocket) throws -> String,
                onMessage: @escaping @Sendable ([[UInt8]], String?) -> Void) throws {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw ZMQError(code: errno, operation: "pipe") }
        for end in pipeEnds { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
        let descriptor = pipeEnds[0]
        readDescriptor = pipeEnds[0]
        wakeDescriptor = pipeEnds[1]
        let started = DispatchSemaphore(value: 0)
        let result = Mutex<Result<String, any Error>?>(nil)
        let thread = Thread { [shared, finished] in
            let socket: ZMQSocket
            do {
                socket = try ZMQSocket(context: context, kind: kind)
                let endpoint = try setup(socket)
                result.withLock { $0 = .success(endpoint) }
            } catch {
                result.withLock { $0 = .failure(error) }
                started.signal()
                finished.signal()
                return
            }
            started.signal()
            Self.run(socket: socket, wake: descriptor, shared: shared, onMessage: onMessage)
            socket.close()
            finished.signal()
        }
        thread.name = name
        thread.start()
        started.wait()
        switch result.withLock({ $0 }) {
        case .success(let endpoint)?: self.endpoint = endpoint
        case .failure(let error)?:
            close(pipeEnds[0])
            close(pipeEnds[1])
            throw error
        case nil: throw ZMQError(code: EINVAL, operation: "socket loop did not start")
        }
    }

    deinit {
        close(wakeDescriptor)
        close(readDescriptor)
    }

    /// Queues a message for sending from the loop thread.
    public func send(_ frames: [[UInt8]]) {
        shared.outbox.withLock { $0.append(frames) }
        var one: UInt8 = 1
        _ = write(wakeDescriptor, &one, 1)
    }

    /// Stops the loop and closes the socket; waits for the thread.
    public func stop() {
        let first = shared.stopping.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var one: UInt8 = 1
        _ = write(wakeDescriptor, &one, 1)
        finished.wait()
    }

    private static func run(socket: ZMQSocket, wake: Int32, shared: Shared, onMessage: @Sendable ([[UInt8]], String?) -> Void) {
        while !shared.stopping.withLock({ $0 }) {
            let ready: [Bool]
            do { ready = try ZMQSocket.poll([socket], descriptors: [wake], timeoutMilliseconds: 250) } catch let error as ZMQError where error.code == EINTR {
                continue  // a signal: poll again
            } catch {
                return  // the context terminated or the socket is gone
            }
            if ready[1] {
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
                while let message = try? socket.receiveWithPeer(dontWait: true) { onMessage(message.frames, message.userID) }
            }
        }
    }
}
