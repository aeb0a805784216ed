import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Slow-loris clients: `count` TCP connections to the server, each sending one byte of a never-finished request
/// per second. A connection the server closes is counted and opened again, so the pressure stays at `count`
/// sockets for as long as the source runs. Runs on a thread of its own (plain sockets, no event loop).
final class SlowConnections: Sendable {
    let port: Int
    let count: Int
    private let stopped = Mutex(false)
    private let stats = Mutex((opened: 0, closedByServer: 0, refused: 0, bytesSent: 0))
    private let done = DispatchSemaphore(value: 0)

    init(port: Int, count: Int) {
        self.port = port
        self.count = count
    }

    /// Opened connections, connections the server closed, failed connects, bytes sent.
    var tally: (opened: Int, closedByServer: Int, refused: Int, bytesSent: Int) { stats.withLock { $0 } }

    func start() {
        Thread.detachNewThread { [self] in
            run()
            done.signal()
        }
    }

    func stop() {
        stopped.withLock { $0 = true }
        done.wait()
    }

    private static let request = Array("POST /queries HTTP/1.1\r\nHost: overload\r\nUser-Agent: slow\r\nContent-Length: 100000\r\n\r\n".utf8)

    private func run() {
        var sockets = [(fd: Int32, sent: Int)](repeating: (-1, 0), count: count)
        while !stopped.withLock({ $0 }) {
            let round = ContinuousClock.now
            for i in sockets.indices {
                if sockets[i].fd < 0 {
                    sockets[i] = (connect(), 0)
                    continue
                }
                if closedByPeer(sockets[i].fd) {
                    close(sockets[i].fd)
                    stats.withLock { $0.closedByServer += 1 }
                    sockets[i] = (connect(), 0)
                    continue
                }
                var byte = Self.request[sockets[i].sent % Self.request.count]
                if send(sockets[i].fd, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 {
                    sockets[i].sent += 1
                    stats.withLock { $0.bytesSent += 1 }
                } else {
                    close(sockets[i].fd)
                    stats.withLock { $0.closedByServer += 1 }
                    sockets[i] = (-1, 0)
                }
            }
            let elapsed = ContinuousClock.now - round
            if elapsed < .seconds(1) { Thread.sleep(forTimeInterval: (Duration.seconds(1) - elapsed).seconds) }
        }
        for s in sockets where s.fd >= 0 { close(s.fd) }
    }

    private func connect() -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else {
            stats.withLock { $0.refused += 1 }
            return -1
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            stats.withLock { $0.refused += 1 }
            return -1
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        stats.withLock { $0.opened += 1 }
        return fd
    }

    /// Whether the server closed (or reset) the connection: readable with nothing (or an error) to read.
    private func closedByPeer(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if n == 0 { return true }
        if n < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        return true  // the server answered (an error status) and will close; count it as closed
    }
}
