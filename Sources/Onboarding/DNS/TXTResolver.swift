import Foundation

/// A DNS TXT lookup over UDP (RFC 1035), enough for the onboarding record: one question, the answer's TXT strings.
/// The resolver is the first `nameserver` of `/etc/resolv.conf` unless given.
public struct TXTResolver: Sendable {
    /// The resolver's address and port.
    public let server: String
    public let port: UInt16
    /// How long to wait for the answer.
    public var timeout: Duration = .seconds(3)

    /// A resolver at `server:port`.
    public init(server: String, port: UInt16 = 53) {
        self.server = server
        self.port = port
    }

    /// The system's resolver (the first `nameserver` of `/etc/resolv.conf`; 127.0.0.1 when none).
    public static func system() -> TXTResolver {
        let conf = (try? String(contentsOfFile: "/etc/resolv.conf", encoding: .utf8)) ?? ""
        let server = conf.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count >= 2 && fields[0] == "nameserver" ? String(fields[1]) : nil
        }.first { !$0.contains(":") }
        return TXTResolver(server: server ?? "127.0.0.1")
    }

    /// The TXT records of `name` (each record's strings joined); empty when the name has none.
    public func txt(_ name: String) throws -> [String] {
        let id = UInt16.random(in: 0...UInt16.max)
        let query = try Self.query(name, id: id)
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw ProbeError("cannot open a UDP socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, server, &address.sin_addr) == 1 else { throw ProbeError("resolver \(server) is not an IPv4 address") }
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, query, query.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard sent == query.count else { throw ProbeError("cannot send to the resolver \(server):\(port)") }
        var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard Foundation.poll(&poll, 1, milliseconds) == 1 else { throw ProbeError("no answer from the resolver \(server):\(port)") }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let received = recv(fd, &buffer, buffer.count, 0)
        guard received > 0 else { throw ProbeError("no answer from the resolver \(server):\(port)") }
        return try Self.parse(Array(buffer.prefix(received)), id: id)
    }

    /// A recursive query for `name`'s TXT records.
    static func query(_ name: String, id: UInt16) throws -> [UInt8] {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") {
            let utf8 = Array(label.utf8)
            guard (1...63).contains(utf8.count) else { throw ProbeError("\(name) is not a DNS name") }
            bytes.append(UInt8(utf8.count))
            bytes += utf8
        }
        bytes += [0, 0, 16, 0, 1]  // root, type TXT, class IN
        return bytes
    }

    /// The TXT strings of an answer to the query with `id`; every length is checked before use.
    static func parse(_ message: [UInt8], id: UInt16) throws -> [String] {
        func u16(_ at: Int) throws -> Int {
            guard at + 2 <= message.count else { throw ProbeError("the resolver's answer is truncated") }
            return Int(message[at]) << 8 | Int(message[at + 1])
        }
        guard message.count >= 12, try u16(0) == Int(id) else { throw ProbeError("the resolver answered another query") }
        let rcode = message[3] & 0x0F
        if rcode == 3 { return [] }  // NXDOMAIN: no such name, so no record
        guard rcode == 0 else { throw ProbeError("the resolver answered with error code \(rcode)") }
        let questions = try u16(4), answers = try u16(6)
        var offset = 12
        func skipName() throws {
            while true {
                guard offset < message.count else { throw ProbeError("the resolver's answer is truncated") }
                let length = Int(message[offset])
                if length & 0xC0 == 0xC0 { offset += 2; return }
                offset += 1
                if length == 0 { return }
                offset += length
            }
        }
        for _ in 0..<questions { try skipName(); offset += 4 }
        var records: [String] = []
        for _ in 0..<answers {
            try skipName()
            let type = try u16(offset), length = try u16(offset + 8)
            offset += 10
            guard offset + length <= message.count else { throw ProbeError("the resolver's answer is truncated") }
            if type == 16 {
                var strings: [UInt8] = [], at = offset
                while at < offset + length {
                    let n = Int(message[at])
                    guard at + 1 + n <= offset + length else { throw ProbeError("a TXT record is malformed") }
                    strings += message[(at + 1)..<(at + 1 + n)]
                    at += 1 + n
                }
                records.append(String(decoding: strings, as: UTF8.self))
            }
            offset += length
        }
        return records
    }
}
