import Foundation
import LookupEngine
import LookupStorage
import ObliviousHTTP

extension ServiceConfig {
    /// The Oblivious HTTP gateway (RFC 9458) on the public port, or the only thing `callveil gateway` serves.
    public struct Gateway: Codable, Sendable, Equatable {
        /// A target the gateway forwards to: inner requests for `authority` go to `origin`. A target without
        /// `authority` takes the inner requests no other target names.
        public struct Target: Codable, Sendable, Equatable {
            /// The inner request's `:authority` this target serves (absent: the default target).
            public var authority: String?
            /// `http://host:port` or `https://host:port` of the lookup service.
            public var origin: String

            /// A target.
            public init(authority: String? = nil, origin: String) {
                self.authority = authority
                self.origin = origin
            }
        }

        /// Whether `serve` and `coordinator` serve the gateway on their public port (default true when the
        /// section is present).
        public var enabled: Bool?
        /// Path of the key configurations, `application/ohttp-keys` (default `/ohttp-configs`).
        public var configPath: String?
        /// Path encapsulated requests are posted to (default `/ohttp-gateway`).
        public var requestPath: String?
        /// Directory of the gateway's keys (default `gateway-keys` next to the config; with a `database` the keys
        /// live in the shared store instead).
        public var keyDirectory: String?
        /// How long each key is published and accepted (default 30 days).
        public var keyLifetimeSeconds: Int?
        /// How long a key is still accepted after its successor is published (default 2 days).
        public var keyOverlapSeconds: Int?
        /// HPKE suites offered (default both `X25519-SHA256-AES128GCM` and `X25519-SHA256-CHACHA20POLY1305`;
        /// also `X25519-SHA256-AES256GCM`).
        public var suites: [String]?
        /// Where inner requests go; absent, `serve` and `coordinator` answer them in-process (`callveil gateway`
        /// needs at least one).
        public var targets: [Target]?
        /// Largest encapsulated request accepted (default 10 MiB + 64 KiB: one largest evaluation key).
        public var maxRequestBytes: Int?
        /// Seconds an encapsulated request is remembered to refuse its replay (default 600).
        public var replayWindowSeconds: Int?
        /// Requests remembered at most for replay detection (default 1,000,000: about 100 MiB).
        public var maxReplayEntries: Int?
        /// Seconds a forwarded request may take, its whole response included (default 30).
        public var targetTimeoutSeconds: Double?
        /// Sizes, ascending, to which inner responses are zero-padded before they are sealed (RFC 9292 padding), so
        /// that the relay, which knows the phone's address, cannot tell a refusal from an answer by its length;
        /// beyond the largest, a multiple of it (default 1024, 4096, 16384, 65536; `[]` pads nothing).
        public var responseSizeClasses: [Int]?

        /// Settings.
        public init(enabled: Bool? = nil, keyDirectory: String? = nil, keyLifetimeSeconds: Int? = nil, keyOverlapSeconds: Int? = nil,
                    suites: [String]? = nil, targets: [Target]? = nil) {
            self.enabled = enabled
            self.keyDirectory = keyDirectory
            self.keyLifetimeSeconds = keyLifetimeSeconds
            self.keyOverlapSeconds = keyOverlapSeconds
            self.suites = suites
            self.targets = targets
        }
    }
}

extension ServiceConfig.Gateway {
    /// The HPKE suites by the names the config uses.
    package static let suiteNames: [String: OHTTPSuite] = [
        "X25519-SHA256-AES128GCM": .x25519AES128GCM,
        "X25519-SHA256-AES256GCM": OHTTPSuite(kem: 0x0020, kdf: 0x0001, aead: 0x0002),
        "X25519-SHA256-CHACHA20POLY1305": .x25519ChaChaPoly,
    ]

    /// The suites offered, in the configured order.
    public var offeredSuites: [OHTTPSuite] {
        (suites ?? ["X25519-SHA256-AES128GCM", "X25519-SHA256-CHACHA20POLY1305"]).compactMap { Self.suiteNames[$0] }
    }

    /// Key lifetime, in seconds.
    public var lifetime: TimeInterval { TimeInterval(keyLifetimeSeconds ?? 30 * 86400) }
    /// Acceptance of a key after its successor is published, in seconds.
    public var overlap: TimeInterval { TimeInterval(keyOverlapSeconds ?? 2 * 86400) }
    /// The key-configuration path.
    public var keysPath: String { configPath ?? "/ohttp-configs" }
    /// The encapsulated-request path.
    public var gatewayPath: String { requestPath ?? "/ohttp-gateway" }
    /// Largest encapsulated request.
    public var requestLimit: Int { maxRequestBytes ?? (10 << 20) + (64 << 10) }

    /// The response size classes in force.
    public var sizeClasses: [Int] { responseSizeClasses ?? [1024, 4096, 16384, 65536] }

    /// Checks paths, suites, bounds and targets.
    public func validate() throws {
        for (name, path) in [("configPath", keysPath), ("requestPath", gatewayPath)] {
            guard path.hasPrefix("/"), path.count > 1, !path.contains("?"), !path.contains("#") else {
                throw ConfigError("gateway.\(name) must be an absolute path without query: \(path)")
            }
        }
        guard keysPath != gatewayPath else { throw ConfigError("gateway.configPath and gateway.requestPath must differ") }
        for name in suites ?? [] where Self.suiteNames[name] == nil {
            throw ConfigError("gateway.suites: unknown suite \(name) (known: \(Self.suiteNames.keys.sorted().joined(separator: ", ")))")
        }
        guard !offeredSuites.isEmpty else { throw ConfigError("gateway.suites must name at least one suite") }
        if let l = keyLifetimeSeconds, l < 60 || l > 400 * 86400 { throw ConfigError("gateway.keyLifetimeSeconds \(l) out of range") }
        if let o = keyOverlapSeconds, o < 1 { throw ConfigError("gateway.keyOverlapSeconds \(o) out of range") }
        guard lifetime > 2 * overlap else { throw ConfigError("gateway.keyLifetimeSeconds must exceed twice keyOverlapSeconds") }
        if let m = maxRequestBytes, m < 1024 || m > 1 << 30 { throw ConfigError("gateway.maxRequestBytes \(m) out of range") }
        if let w = replayWindowSeconds, w < 1 || w > 7 * 86400 { throw ConfigError("gateway.replayWindowSeconds \(w) out of range") }
        if let n = maxReplayEntries, n < 1000 || n > 100_000_000 { throw ConfigError("gateway.maxReplayEntries \(n) out of range") }
        if let t = targetTimeoutSeconds, !(t > 0 && t <= 600) { throw ConfigError("gateway.targetTimeoutSeconds \(t) out of range") }
        if let classes = responseSizeClasses {
            guard classes.count <= 16, classes.allSatisfy({ (64...(16 << 20)).contains($0) }), zip(classes, classes.dropFirst()).allSatisfy({ $0 < $1 }) else {
                throw ConfigError("gateway.responseSizeClasses must be at most 16 ascending sizes of 64 bytes to 16 MiB")
            }
        }
        var authorities = Set<String?>()
        for target in targets ?? [] {
            guard let url = URL(string: target.origin), let scheme = url.scheme, ["http", "https"].contains(scheme),
                  url.host != nil, url.path.isEmpty || url.path == "/", url.query == nil else {
                throw ConfigError("gateway.targets: origin must be http(s)://host[:port], not \(target.origin)")
            }
            guard authorities.insert(target.authority?.lowercased()).inserted else {
                throw ConfigError("gateway.targets: two targets for authority \(target.authority ?? "(default)")")
            }
        }
    }
}
