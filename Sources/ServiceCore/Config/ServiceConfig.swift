import Foundation
import LookupEngine
import LookupStorage

/// The service configuration file (JSON). It reads the reference service's format (SPEC-PIR §7.9) as is:
/// `{"users": [{"tier", "tokens"}], "usecases": [{"name", "fileStem", "shardCount", "versionCount"}]}`, plus
/// CallVeil's optional settings. Relative paths are resolved against the file's directory.
public struct ServiceConfig: Codable, Sendable, Equatable {
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
    /// PIR threads per query (default: every core the process may use).
    public var computeThreads: Int?
    /// Queries computed at the same time (default 2, 1 on one core).
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
    /// Where the service writes its state: relative paths of the key store, the nonce store, the issuer and gateway
    /// keys and the report store resolve against it (absolute, or relative to the config file). Default:
    /// `$STATE_DIRECTORY` when systemd sets it (`StateDirectory=`), else the config file's directory. Inputs (use
    /// cases, TLS files, the password and key-encryption-key files) stay relative to the config file, which may be
    /// read-only.
    public var stateDirectory: String?

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

    /// Reads and validates a config file; relative paths become absolute against the file's directory (those of
    /// the state the service writes, against `stateDirectory`). A key no setting has is an error.
    public static func load(path: String) throws -> ServiceConfig {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do { data = try Data(contentsOf: url) } catch { throw ConfigError("cannot read \(path): \(error.localizedDescription)") }
        var config: ServiceConfig
        do { config = try JSONDecoder().decode(ServiceConfig.self, from: Self.withDefaultLists(data)) } catch {
            throw ConfigError("\(path) is not a valid service config: \(error)")
        }
        if let object = try? JSONSerialization.jsonObject(with: data), let error = ConfigKeys.error(try ConfigKeys.unknown(in: object, decoded: config), in: path) {
            throw error
        }
        let base = url.deletingLastPathComponent().path
        func resolve(_ p: String) -> String { p.hasPrefix("/") ? p : base + "/" + p }
        let systemdState = ProcessInfo.processInfo.environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
        let state = resolve(config.stateDirectory ?? systemdState ?? base)
        config.stateDirectory = state
        func resolveState(_ p: String) -> String { p.hasPrefix("/") ? p : state + "/" + p }
        for i in config.usecases.indices {
            config.usecases[i].fileStem = config.usecases[i].fileStem.map(resolve)
            config.usecases[i].manifest = config.usecases[i].manifest.map(resolve)
        }
        var keys = config.keys ?? Keys()
        keys.database = resolveState(keys.database ?? "keys.sqlite")
        config.keys = keys
        var privacyPass = config.privacyPass ?? PrivacyPass()
        privacyPass.keyDirectory = resolveState(privacyPass.keyDirectory ?? "issuer-keys")
        privacyPass.nonceDatabase = resolveState(privacyPass.nonceDatabase ?? "nonces.sqlite")
        config.privacyPass = privacyPass
        if var gateway = config.gateway {
            gateway.keyDirectory = resolveState(gateway.keyDirectory ?? "gateway-keys")
            config.gateway = gateway
        }
        if config.reports != nil || config.callDirectory != nil || config.urlFilter != nil {
            // The feed and URL reports need the report store too; without a `reports` section its endpoint is off.
            var reports = config.reports ?? Reports()
            if config.reports == nil { reports.enabled = false }
            reports.database = resolveState(reports.database ?? "reports.sqlite")
            reports.reporterKeyFile = resolveState(reports.reporterKeyFile ?? "reporter.key")
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
        if !FileManager.default.fileExists(atPath: state) {
            do { try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) } catch {
                throw ConfigError("cannot create the state directory \(state): \(error.localizedDescription)")
            }
        }
        return config
    }

    /// The file with `users` and `usecases` added as empty lists when absent (a `callveil gateway` file has
    /// neither); anything not a JSON object is left to the decoder to refuse.
    package static func withDefaultLists(_ data: Data) -> Data {
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
        if let m = keys?.cacheMegabytes, !Keys.cacheMegabytesRange.contains(m) { throw ConfigError("keys.cacheMegabytes \(m) out of range") }
        if let m = keys?.maxStoredMegabytes, m < 1 || m > 1 << 30 { throw ConfigError("keys.maxStoredMegabytes \(m) out of range") }
        if let n = privacyPass?.maxNoncesPerKey, n < 1 { throw ConfigError("privacyPass.maxNoncesPerKey \(n) out of range") }
        if let n = http?.maxConnections, n < 1 || n > 1_000_000 { throw ConfigError("http.maxConnections \(n) out of range") }
        if let t = http?.requestTimeoutSeconds, !(t >= 0.1 && t <= 3600) { throw ConfigError("http.requestTimeoutSeconds \(t) out of range") }
        if let t = http?.handshakeTimeoutSeconds, !(t >= 0.1 && t <= 3600) { throw ConfigError("http.handshakeTimeoutSeconds \(t) out of range") }
        if let t = http?.shutdownGraceSeconds, !(t >= 0 && t <= 3600) { throw ConfigError("http.shutdownGraceSeconds \(t) out of range") }
        if let t = http?.queueTimeoutSeconds, !(t >= 0.01 && t <= 600) { throw ConfigError("http.queueTimeoutSeconds \(t) out of range") }
        if let m = http?.maxBodyMegabytesPerConnection, m < 11 || m > 1 << 20 {
            throw ConfigError("http.maxBodyMegabytesPerConnection \(m) out of range (at least 11: one largest body)")
        }
        if let r = http?.minBodyBytesPerSecond, r < 1 || r > 1 << 30 { throw ConfigError("http.minBodyBytesPerSecond \(r) out of range") }
        if let m = http?.maxBodyMegabytesInFlight, m < 10 || m > 1 << 20 {
            throw ConfigError("http.maxBodyMegabytesInFlight \(m) out of range (at least 10: one largest body)")
        }
        if let n = http?.maxRequestsPerUser, n < 1 || n > 1_000_000 { throw ConfigError("http.maxRequestsPerUser \(n) out of range") }
        if let n = http?.maxRequestsProcessing, n < 1 || n > 100_000 { throw ConfigError("http.maxRequestsProcessing \(n) out of range") }
        if let w = http?.maxAdmissionWaitMilliseconds, w < 1 || w > 600_000 {
            throw ConfigError("http.maxAdmissionWaitMilliseconds \(w) out of range")
        }
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

    /// The tier of each user token; a token listed under several tiers keeps the last.
    public var tierByToken: [String: String] {
        var map: [String: String] = [:]
        for tier in users { for token in tier.tokens { map[token] = tier.tier } }
        return map
    }
}
