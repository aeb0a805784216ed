import Foundation

/// The coordinators a worker connects to, from its command line: a list of endpoints, where a `tcp://` endpoint
/// whose host is a DNS name that resolves to several addresses stands for one coordinator per address (a name
/// that resolves to one address is kept as a name, so ZeroMQ resolves it again when it reconnects). Names are
/// resolved once, at start: a coordinator added to the name later needs a worker restart (or a list).
public enum CoordinatorEndpoints {
    /// Each endpoint with its CURVE server key (if any), names with several addresses expanded.
    public static func expand(_ endpoints: [(endpoint: String, serverKey: String?)]) -> [(endpoint: String, serverKey: String?)] {
        var out: [(String, String?)] = []
        var seen = Set<String>()
        for (endpoint, key) in endpoints {
            for expanded in expand(endpoint) where seen.insert(expanded).inserted { out.append((expanded, key)) }
        }
        return out
    }

    /// One endpoint, expanded as above.
    static func expand(_ endpoint: String) -> [String] {
        guard endpoint.hasPrefix("tcp://") else { return [endpoint] }
        let rest = endpoint.dropFirst("tcp://".count)
        guard let colon = rest.lastIndex(of: ":"), !rest.hasPrefix("[") else { return [endpoint] }
        let host = String(rest[..<colon]), port = String(rest[rest.index(after: colon)...])
        guard !host.isEmpty, host != "*", Int(port) != nil, !isNumericAddress(host) else { return [endpoint] }
        let addresses = resolve(host)
        guard addresses.count > 1 else { return [endpoint] }
        return addresses.map { $0.contains(":") ? "tcp://[\($0)]:\(port)" : "tcp://\($0):\(port)" }
    }

    static func isNumericAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// The distinct addresses of `host` (TCP), in the resolver's order; empty when it does not resolve.
    static func resolve(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(current.pointee.ai_addr, current.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 {
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !addresses.contains(text) { addresses.append(text) }
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }
}
