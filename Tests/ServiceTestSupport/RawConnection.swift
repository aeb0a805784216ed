import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to a loopback port, for tests that must misbehave below HTTP (send a request slowly,
/// hold a connection idle) where an HTTP client would not.
public final class RawConnection: @unchecked Sendable {
    private let fd: Int32

    /// Connects to `127.0.0.1:port`. The descriptor becomes the object's only once connected: a class whose
    /// initializer throws after its properties are set still runs `deinit`, which would close it a second time
    /// (and with it whatever file another thread had opened under the same number meanwhile).
    public init(port: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(descriptor)
            throw POSIXError(.ECONNREFUSED)
        }
        fd = descriptor
    }

    deinit { close(fd) }

    /// Sends `text` (errors ignored: the peer may have closed).
    public func send(_ text: String) {
        sendBytes(Array(text.utf8))
    }

    /// Sends `bytes` in full unless the peer closes (errors ignored).
    public func sendBytes(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            offset += n
        }
    }

    /// Sends filler bytes as fast as the peer takes them for `seconds` (or until it closes); returns how many it took.
    public func sendAsAccepted(seconds: Double) async -> Int {
        await offPool {
            let chunk = [UInt8](repeating: 0x5A, count: 1 << 16)
            var total = 0
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                var poller = pollfd(fd: self.fd, events: Int16(POLLOUT), revents: 0)
                guard poll(&poller, 1, Int32(max(deadline.timeIntervalSinceNow * 1000, 1))) > 0 else { continue }
                if poller.revents & Int16(POLLERR | POLLHUP) != 0 { break }
                let n = chunk.withUnsafeBytes { Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                if n < 0, errno == EAGAIN || errno == EWOULDBLOCK { continue }
                guard n > 0 else { break }
                total += n
            }
            return total
        }
    }

    /// Reads what arrives within `seconds`: the bytes, and whether the peer closed the connection. It waits on a
    /// Dispatch thread, so a test's wait never takes a thread of the concurrency pool the server under test needs.
    /// With `until`, it returns as soon as what arrived contains that text.
    public func read(seconds: Double, until marker: String? = nil) async -> (bytes: [UInt8], closed: Bool) {
        await offPool { self.blockingRead(seconds: seconds, until: marker.map { Array($0.utf8) }) }
    }

    private func blockingRead(seconds: Double, until marker: [UInt8]?) -> (bytes: [UInt8], closed: Bool) {
        var out: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(max(deadline.timeIntervalSinceNow * 1000, 1)))
            guard ready > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return (out, true) }
            out += buffer[0..<n]
            if let marker, out.count >= marker.count, (0...(out.count - marker.count)).contains(where: { out[$0..<($0 + marker.count)].elementsEqual(marker) }) {
                return (out, false)
            }
        }
        return (out, false)
    }
}
