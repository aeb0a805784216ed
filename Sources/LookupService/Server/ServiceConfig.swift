import Foundation
import LookupEngine
import LookupStorage

/// The service configuration file (JSON). It reads the reference service's format (SPEC-PIR §7.9) as is:
/// `{"users": [{"tier", "tokens"}], "usecases": [{"name", "fileStem", "shardCount", "versionCount"}]}`, plus
/// CallVeil's optional settings. Relative paths are resolved against the file's directory.
public struct ServiceConfig: Codable, Sendable, Equatable {
    /// A user tier and the user tokens (standard base64 strings) that belong to it.
    public struct UserTier: Codable, Sendable, Equatable {
        /// Tier name, e.g. `tier1`.
        public var tier: String
        /// User tokens of the tier, compared verbatim with the `Bearer` value.
        public var tokens: [String]
        /// Privacy Pass tokens `/issue` gives each user token per second, sustained (absent: no limit).
        public var issuePerSecond: Double?
        /// Tokens a user token may get at once after idleness (default 10 × `issuePerSecond`, at least 10).
        public var issueBurst: Int?

        /// A tier.
        public init(tier: String, tokens: [String], issuePerSecond: Double? = nil, issueBurst: Int? = nil) {
            self.tier = tier
            self.tokens = tokens
            self.issuePerSecond = issuePerSecond
            self.issueBurst = issueBurst
        }
    }

    /// A use case: its name and where its processed shards are.
    public struct UseCase: Codable, Sendable, Equatable {
        /// Use-case name devices ask for, e.g. `net.example.lookup.block`.
        public var name: String
        /// Path stem of the shard files: `<fileStem>-<i>.params.txtpb` (or `.binpb`) with `<fileStem>-<i>.cvshard`
        /// (CallVeil) or `<fileStem>-<i>.bin` (the reference's format). Ignored when `manifest` is given.
        public var fileStem: String?
        /// A dataset manifest (`process-db`'s `<stem>.manifest.json`): the version is loaded through it, every
        /// file checked against its recorded size and SHA-256.
        public var manifest: String?
        /// Number of shards; when absent, consecutive shard files from 0 are counted.
        public var shardCount: Int?
        /// Config versions kept for queries built against older configs (default 2; 0 removes the use case).
        public var versionCount: Int?

        /// A use case.
        public init(name: String, fileStem: String? = nil, manifest: String? = nil, shardCount: Int? = nil, versionCount: Int? = nil) {
            self.name = name
            self.fileStem = fileStem
            self.manifest = manifest
            self.shardCount = shardCount
            self.versionCount = versionCount
        }
    }

    /// Where and how evaluation keys are kept.
    public struct Keys: Codable, Sendable, Equatable {
        /// SQLite database file (default `keys.sqlite` next to the config).
        public var database: String?
        /// Keys older than this many seconds (since upload) are expired and reported missing (default 30 days).
        public var maxAgeSeconds: Int?
        /// Largest accepted serialized evaluation key, in bytes (default 8 MiB).
        public var maxKeyBytes: Int?
        /// Memory for parsed keys kept ready for queries, in MiB (default 512).
        public var cacheMegabytes: Int?
        /// Total size of the stored keys, in MiB; beyond it the keys uploaded longest ago are evicted (default 32,768).
        public var maxStoredMegabytes: Int?

        /// Key settings.
        public init(database: String? = nil, maxAgeSeconds: Int? = nil, maxKeyBytes: Int? = nil, cacheMegabytes: Int? = nil,
                    maxStoredMegabytes: Int? = nil) {
            self.database = database
            self.maxAgeSeconds = maxAgeSeconds
            self.maxKeyBytes = maxKeyBytes
            self.cacheMegabytes = cacheMegabytes
            self.maxStoredMegabytes = maxStoredMegabytes
        }
    }

    /// Privacy Pass authentication of the PIR endpoints and token issuance.
    public struct PrivacyPass: Codable, Sendable, Equatable {
        /// Whether PIR requests need a token (default true).
        public var enabled: Bool?
        /// Directory of the issuer keys (default `issuer-keys` next to the config).
        public var keyDirectory: String?
        /// SQLite file of spent nonces (default `nonces.sqlite` next to the config).
        public var nonceDatabase: String?
        /// Validity of each issuer key (default 30 days).
        public var keyLifetimeSeconds: Int?
        /// How long a successor key is published before it issues, and the old key accepted after (default 2 days).
        public var keyOverlapSeconds: Int?
        /// Issuer names a token's challenge may carry (its `challenge_digest` must then be the SHA-256 of the
        /// `TokenChallenge` of one of them, type 2, empty redemption context and origin info). Absent (the default),
        /// any challenge is accepted: the issuer name a device uses is undocumented, and a wrong list refuses it.
        public var issuerNames: [String]?
        /// Spent nonces kept per issuer key before its tokens are refused with 503 (default 100,000,000).
        public var maxNoncesPerKey: Int?

        /// Settings.
        public init(enabled: Bool? = nil, keyDirectory: String? = nil, nonceDatabase: String? = nil,
                    keyLifetimeSeconds: Int? = nil, keyOverlapSeconds: Int? = nil, issuerNames: [String]? = nil,
                    maxNoncesPerKey: Int? = nil) {
            self.enabled = enabled
            self.keyDirectory = keyDirectory
            self.nonceDatabase = nonceDatabase
            self.keyLifetimeSeconds = keyLifetimeSeconds
            self.keyOverlapSeconds = keyOverlapSeconds
            self.issuerNames = issuerNames
            self.maxNoncesPerKey = maxNoncesPerKey
        }
    }

    /// The shared PostgreSQL store of a multi-coordinator deployment; absent, the stores are SQLite files on
    /// this host. In the file either a URL string or an object with the URL and settings.
    public struct Database: Codable, Sendable, Equatable {
        /// `postgres://user@host:port/database` (`?sslmode=disable|prefer|require`).
        public var url: String
        /// Connections per process at most (default 16).
        public var poolSize: Int?
        /// File holding the role's password (instead of one in the URL).
        public var passwordFile: String?
        /// File of the key-encryption key that seals evaluation keys at rest (default `store.kek` next to the
        /// config; `callveil store-key` makes one). Every coordinator of a deployment needs the same one.
        public var keyEncryptionKeyFile: String?
        /// Seconds one store operation may take before the request is answered 503 (default 3).
        public var operationTimeoutSeconds: Double?

        /// Settings for the store at `url`.
        public init(url: String, poolSize: Int? = nil, passwordFile: String? = nil, keyEncryptionKeyFile: String? = nil,
                    operationTimeoutSeconds: Double? = nil) {
            self.url = url
            self.poolSize = poolSize
            self.passwordFile = passwordFile
            self.keyEncryptionKeyFile = keyEncryptionKeyFile
            self.operationTimeoutSeconds = operationTimeoutSeconds
        }

        private enum CodingKeys: String, CodingKey { case url, poolSize, passwordFile, keyEncryptionKeyFile, operationTimeoutSeconds }

        public init(from decoder: any Decoder) throws {
            if let url = try? decoder.singleValueContainer().decode(String.self) {
                self.init(url: url)
                return
            }
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(url: try c.decode(String.self, forKey: .url), poolSize: try c.decodeIfPresent(Int.self, forKey: .poolSize),
                      passwordFile: try c.decodeIfPresent(String.self, forKey: .passwordFile),
                      keyEncryptionKeyFile: try c.decodeIfPresent(String.self, forKey: .keyEncryptionKeyFile),
                      operationTimeoutSeconds: try c.decodeIfPresent(Double.self, forKey: .operationTimeoutSeconds))
        }

        /// The connection settings (the password file read, the URL checked).
        public func settings() throws -> PostgresSettings {
            var settings = try PostgresSettings(url: url, poolSize: poolSize ?? PostgresSettings.defaultPoolSize, passwordFile: passwordFile)
            if let seconds = operationTimeoutSeconds { settings.operationTimeout = .milliseconds(Int64(seconds * 1000)) }
            return settings
        }
    }

    /// Listener limits and the admin listener.
    public struct HTTPSettings: Codable, Sendable, Equatable {
        /// Open connections on the public port at most; beyond, new connections wait in the kernel's backlog
        /// (default 1024).
        public var maxConnections: Int?
        /// Seconds a client has to send a whole request (headers and body), counted from the connection's
        /// opening or the previous response; then the connection is closed (default 30). A connection with no
        /// request in progress for this long is closed too, whatever its protocol.
        public var requestTimeoutSeconds: Double?
        /// Seconds from accepting a connection to its first request's headers: TLS handshake, HTTP/2 preface and
        /// settings included (default: the request timeout, at most 10).
        public var handshakeTimeoutSeconds: Double?
        /// Seconds a request may wait for compute before it is answered 503 (default 2).
        public var queueTimeoutSeconds: Double?
        /// Address of the admin listener (`/healthz`, `/metrics`; default 127.0.0.1).
        public var adminHost: String?
        /// Port of the admin listener (default 9090; 0 picks a free one).
        public var adminPort: Int?
        /// Request-body MiB the public port holds at once, reserved as bodies arrive; a request beyond is answered
        /// 503 (default 256).
        public var maxBodyMegabytesInFlight: Int?
        /// Request-body MiB one connection holds at once (an HTTP/2 connection carries many streams; default 64).
        public var maxBodyMegabytesPerConnection: Int?
        /// Average bytes per second a request body must arrive at after a 2 s grace; a slower body's stream or
        /// connection is closed (default 16384).
        public var minBodyBytesPerSecond: Int?
        /// Queries waiting for compute at most, per compute slot; beyond, 503 at once (default 8).
        public var queuedQueriesPerSlot: Int?
        /// Requests the public port handles at once; beyond, 503 at once before any work (default 256).
        public var maxRequestsInFlight: Int?
        /// PIR requests of one User-Identifier handled at once; beyond, 429 at once (default 4).
        public var maxRequestsPerUser: Int?
        /// The public port's protocol: `http1` (default), `h2c` (HTTP/2 with prior knowledge, no TLS: behind a
        /// terminator), or `tls` (TLS with ALPN `h2` and `http/1.1`; needs `tlsCertificateFile` and `tlsKeyFile`).
        public var `protocol`: String?
        /// PEM certificate chain of the public port when `protocol` is `tls`.
        public var tlsCertificateFile: String?
        /// PEM private key of the public port when `protocol` is `tls`.
        public var tlsKeyFile: String?

        /// Settings.
        public init(maxConnections: Int? = nil, requestTimeoutSeconds: Double? = nil, queueTimeoutSeconds: Double? = nil,
                    adminHost: String? = nil, adminPort: Int? = nil, maxBodyMegabytesInFlight: Int? = nil,
                    queuedQueriesPerSlot: Int? = nil) {
            self.maxBodyMegabytesInFlight = maxBodyMegabytesInFlight
            self.queuedQueriesPerSlot = queuedQueriesPerSlot
            self.maxConnections = maxConnections
            self.requestTimeoutSeconds = requestTimeoutSeconds
            self.queueTimeoutSeconds = queueTimeoutSeconds
            self.adminHost = adminHost
            self.adminPort = adminPort
        }
    }

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

    /// Not used by CallVeil; accepted for compatibility with the reference's file.
    public var issuerRequestUri: String?
    /// User tiers.
    public var users: [UserTier]
    /// Use cases.
    public var usecases: [UseCase]
    /// Evaluation-key storage.
    public var keys: Keys?
    /// Privacy Pass settings.
    public var privacyPass: PrivacyPass?
    /// PIR threads per query (default: every core).
    public var computeThreads: Int?
    /// Queries computed at the same time (default 2).
    public var concurrentQueries: Int?
    /// Listener limits and the admin listener.
    public var http: HTTPSettings?
    /// The shared PostgreSQL store (absent: SQLite files on this host).
    public var database: Database?
    /// The Oblivious HTTP gateway.
    public var gateway: Gateway?
    /// Junk-report ingestion and the policy that turns reports into the blocking list.
    public var reports: Reports?
    /// The Call Directory feed.
    public var callDirectory: CallDirectory?
    /// The URL-filter prefilter download and `/report`.
    public var urlFilter: URLFilter?

    /// A configuration.
    public init(users: [UserTier], usecases: [UseCase], keys: Keys? = nil, privacyPass: PrivacyPass? = nil,
                computeThreads: Int? = nil, concurrentQueries: Int? = nil) {
        self.users = users
        self.usecases = usecases
        self.keys = keys
        self.privacyPass = privacyPass
        self.computeThreads = computeThreads
        self.concurrentQueries = concurrentQueries
    }

    /// Reads and validates a config file; relative paths become absolute against the file's directory.
    public static func load(path: String) throws -> ServiceConfig {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do { data = try Data(contentsOf: url) } catch { throw ConfigError("cannot read \(path): \(error.localizedDescription)") }
        var config: ServiceConfig
        do { config = try JSONDecoder().decode(ServiceConfig.self, from: Self.withDefaultLists(data)) } catch {
            throw ConfigError("\(path) is not a valid service config: \(error)")
        }
        let base = url.deletingLastPathComponent().path
        func resolve(_ p: String) -> String { p.hasPrefix("/") ? p : base + "/" + p }
        for i in config.usecases.indices {
            config.usecases[i].fileStem = config.usecases[i].fileStem.map(resolve)
            config.usecases[i].manifest = config.usecases[i].manifest.map(resolve)
        }
        var keys = config.keys ?? Keys()
        keys.database = resolve(keys.database ?? "keys.sqlite")
        config.keys = keys
        var privacyPass = config.privacyPass ?? PrivacyPass()
        privacyPass.keyDirectory = resolve(privacyPass.keyDirectory ?? "issuer-keys")
        privacyPass.nonceDatabase = resolve(privacyPass.nonceDatabase ?? "nonces.sqlite")
        config.privacyPass = privacyPass
        if var gateway = config.gateway {
            gateway.keyDirectory = resolve(gateway.keyDirectory ?? "gateway-keys")
            config.gateway = gateway
        }
        if config.reports != nil || config.callDirectory != nil || config.urlFilter != nil {
            // The feed and URL reports need the report store too; without a `reports` section its endpoint is off.
            var reports = config.reports ?? Reports()
            if config.reports == nil { reports.enabled = false }
            reports.database = resolve(reports.database ?? "reports.sqlite")
            reports.reporterKeyFile = resolve(reports.reporterKeyFile ?? "reporter.key")
            config.reports = reports
        }
        if var urlFilter = config.urlFilter {
            urlFilter.prefilterDirectory = resolve(urlFilter.prefilterDirectory)
            config.urlFilter = urlFilter
        }
        if var http = config.http {
            http.tlsCertificateFile = http.tlsCertificateFile.map(resolve)
            http.tlsKeyFile = http.tlsKeyFile.map(resolve)
            config.http = http
        }
        if var database = config.database {
            database.passwordFile = database.passwordFile.map(resolve)
            database.keyEncryptionKeyFile = resolve(database.keyEncryptionKeyFile ?? "store.kek")
            config.database = database
        }
        try config.validate()
        return config
    }

    /// The file with `users` and `usecases` added as empty lists when absent (a `callveil gateway` file has
    /// neither); anything not a JSON object is left to the decoder to refuse.
    static func withDefaultLists(_ data: Data) -> Data {
        guard var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              object["users"] == nil || object["usecases"] == nil else { return data }
        object["users"] = object["users"] ?? [Any]()
        object["usecases"] = object["usecases"] ?? [Any]()
        return (try? JSONSerialization.data(withJSONObject: object)) ?? data
    }

    /// Checks names, counts and bounds.
    public func validate() throws {
        var names = Set<String>()
        for u in usecases {
            guard !u.name.isEmpty, names.insert(u.name).inserted else { throw ConfigError("use case names must be unique and non-empty: \(u.name)") }
            guard u.fileStem != nil || u.manifest != nil else { throw ConfigError("\(u.name): give fileStem or manifest") }
            if let s = u.shardCount, s < 1 || s > 1 << 16 { throw ConfigError("\(u.name): shardCount \(s) out of range") }
            if let v = u.versionCount, v < 0 || v > 16 { throw ConfigError("\(u.name): versionCount \(v) out of range") }
        }
        if let t = computeThreads, t < 1 || t > 1024 { throw ConfigError("computeThreads \(t) out of range") }
        if let c = concurrentQueries, c < 1 || c > 1024 { throw ConfigError("concurrentQueries \(c) out of range") }
        for tier in users {
            if let r = tier.issuePerSecond, !(r >= 0 && r <= 1_000_000) { throw ConfigError("\(tier.tier): issuePerSecond \(r) out of range") }
            if let b = tier.issueBurst, b < 1 || b > 1_000_000 { throw ConfigError("\(tier.tier): issueBurst \(b) out of range") }
        }
        for name in privacyPass?.issuerNames ?? [] where name.isEmpty || name.utf8.count > 65535 {
            throw ConfigError("privacyPass.issuerNames: a name must have 1 to 65535 bytes")
        }
        if let database {
            do { _ = try PostgresSettings(url: database.url, poolSize: database.poolSize ?? PostgresSettings.defaultPoolSize) } catch let error as StoreError {
                throw ConfigError("database: \(error.reason)")
            }
            if let t = database.operationTimeoutSeconds, !(t > 0 && t <= 600) { throw ConfigError("database.operationTimeoutSeconds \(t) out of range") }
        }
        if let a = keys?.maxAgeSeconds, a < 1 { throw ConfigError("keys.maxAgeSeconds \(a) out of range") }
        if let b = keys?.maxKeyBytes, b < 1 || b > 1 << 30 { throw ConfigError("keys.maxKeyBytes \(b) out of range") }
        if let m = keys?.cacheMegabytes, m < 0 || m > 1 << 24 { throw ConfigError("keys.cacheMegabytes \(m) out of range") }
        if let m = keys?.maxStoredMegabytes, m < 1 || m > 1 << 30 { throw ConfigError("keys.maxStoredMegabytes \(m) out of range") }
        if let n = privacyPass?.maxNoncesPerKey, n < 1 { throw ConfigError("privacyPass.maxNoncesPerKey \(n) out of range") }
        if let n = http?.maxConnections, n < 1 || n > 1_000_000 { throw ConfigError("http.maxConnections \(n) out of range") }
        if let t = http?.requestTimeoutSeconds, !(t >= 0.1 && t <= 3600) { throw ConfigError("http.requestTimeoutSeconds \(t) out of range") }
        if let t = http?.handshakeTimeoutSeconds, !(t >= 0.1 && t <= 3600) { throw ConfigError("http.handshakeTimeoutSeconds \(t) out of range") }
        if let t = http?.queueTimeoutSeconds, !(t >= 0.01 && t <= 600) { throw ConfigError("http.queueTimeoutSeconds \(t) out of range") }
        if let m = http?.maxBodyMegabytesPerConnection, m < 11 || m > 1 << 20 {
            throw ConfigError("http.maxBodyMegabytesPerConnection \(m) out of range (at least 11: one largest body)")
        }
        if let r = http?.minBodyBytesPerSecond, r < 1 || r > 1 << 30 { throw ConfigError("http.minBodyBytesPerSecond \(r) out of range") }
        if let m = http?.maxBodyMegabytesInFlight, m < 10 || m > 1 << 20 {
            throw ConfigError("http.maxBodyMegabytesInFlight \(m) out of range (at least 10: one largest body)")
        }
        if let n = http?.maxRequestsPerUser, n < 1 || n > 1_000_000 { throw ConfigError("http.maxRequestsPerUser \(n) out of range") }
        if let n = http?.maxRequestsInFlight, n < 1 || n > 1_000_000 { throw ConfigError("http.maxRequestsInFlight \(n) out of range") }
        if let q = http?.queuedQueriesPerSlot, q < 0 || q > 4096 { throw ConfigError("http.queuedQueriesPerSlot \(q) out of range") }
        if let p = http?.adminPort, p < 0 || p > 65535 { throw ConfigError("http.adminPort \(p) out of range") }
        if let p = http?.protocol {
            guard ["http1", "h2c", "tls"].contains(p) else { throw ConfigError("http.protocol must be http1, h2c or tls, not \(p)") }
            if p == "tls", http?.tlsCertificateFile == nil || http?.tlsKeyFile == nil {
                throw ConfigError("http.protocol tls needs http.tlsCertificateFile and http.tlsKeyFile")
            }
        }
        if let gateway { try gateway.validate() }
        try reports?.validate()
        try callDirectory?.validate()
        try urlFilter?.validate()
    }

    /// The `/issue` rate of each tier that has one.
    public var issueRates: [String: IssuanceLimiter.Rate] {
        var rates: [String: IssuanceLimiter.Rate] = [:]
        for tier in users {
            guard let perSecond = tier.issuePerSecond else { continue }
            rates[tier.tier] = .init(perSecond: perSecond, burst: Double(tier.issueBurst ?? max(Int(perSecond * 10), 10)))
        }
        return rates
    }

    /// The tier of each user token; a token listed under several tiers keeps the last.
    public var tierByToken: [String: String] {
        var map: [String: String] = [:]
        for tier in users { for token in tier.tokens { map[token] = tier.tier } }
        return map
    }
}
