import Foundation
import Gateway
import Hummingbird
import HummingbirdCore
import Logging
import LookupEngine
import LookupProtocol
import LookupStorage
import NIOCore
import ObliviousHTTP
import PIR
import Reports
import ServiceCore
import ServiceLifecycle
import Synchronization

/// The single-host Live Caller ID Lookup service: owns the use-case registry, the evaluation-key store, the
/// shard executor and the API, loads use cases from the service config, and reloads them on request.
public actor LookupServer {
    /// The path of the service config file.
    public nonisolated let configPath: String
    /// Loaded use-case versions.
    public nonisolated let registry: UseCaseRegistry
    /// Evaluation keys.
    public nonisolated let keyStore: any EvaluationKeyStore
    /// The shared PostgreSQL store, when the config names one (else the stores are SQLite files).
    public nonisolated let sharedStore: PostgresStore?
    /// Where shard queries run.
    public nonisolated let executor: any ShardExecutor
    /// Metrics.
    public nonisolated let metrics: ServiceMetrics
    /// The process's one compute pool (key parsing and PIR work); executors in this process share it.
    public nonisolated let pool: ComputePool
    /// The endpoints.
    public nonisolated let api: LookupAPI
    /// The user token → tier map of the current config (read by the token issuer).
    public nonisolated let tiers: Mutex<[String: String]>
    /// Privacy Pass issuer keys, when authentication is on.
    public nonisolated let issuerKeys: IssuerKeyRing?
    /// Spent token nonces, when authentication is on.
    public nonisolated let nonces: (any NonceStore)?
    /// Issuer names a token's challenge may carry.
    public nonisolated let issuerNames: [String]?
    /// The public port's request-body bounds (port and connection budgets, minimum rate), shared by its routes.
    public nonisolated let bodies: BodyAdmissionMiddleware.Bounds
    /// `/issue` rate per user token, by tier.
    public nonisolated let issuanceLimiter: IssuanceLimiter
    /// Listener limits and the admin listener, as read at start (a reload does not move listeners).
    public nonisolated let http: ServiceConfig.HTTPSettings
    /// The Oblivious HTTP gateway's settings, keys and replay cache, when the gateway is on (as read at start).
    public nonisolated let gateway: (settings: ServiceConfig.Gateway, keys: GatewayKeyRing, replay: GatewayReplayCache)?
    /// Reports and the Call Directory lists, when any of `reports`, `callDirectory`, `urlFilter` is configured.
    public nonisolated let reportStore: (any ReportStore)?
    /// Reporter credentials, when classification reports are taken.
    public nonisolated let reporterCredentials: ReporterCredential?
    /// The report, feed and URL-filter settings as read at start.
    private nonisolated let provider: (reports: ServiceConfig.Reports?, callDirectory: ServiceConfig.CallDirectory?, urlFilter: ServiceConfig.URLFilter?)
    /// Reports per reporter.
    private nonisolated let reportLimiter: IssuanceLimiter
    /// The gateway's target when it forwards to other origins (else it answers in-process).
    private nonisolated let gatewayOrigin: OriginGatewayTarget?
    private let logger: Logger

    /// Reads the config, opens the key store and loads every use case. `makeExecutor` builds the shard executor
    /// over the key store and the shared store (a cluster coordinator); nil runs queries in-process.
    public init(configPath: String, makeExecutor: (@Sendable (ExecutorEnvironment) throws -> any ShardExecutor)? = nil,
                logger: Logger) async throws {
        try await self.init(configPath: configPath, pool: nil, metrics: nil, makeExecutor: makeExecutor, logger: logger)
    }

    /// As above, with the compute pool and metrics given (an embedded cluster's workers share the HTTP layer's
    /// pool; a coordinator records into the same metrics).
    public init(configPath: String, pool: ComputePool?, metrics: ServiceMetrics?,
                makeExecutor: (@Sendable (ExecutorEnvironment) throws -> any ShardExecutor)?, logger: Logger) async throws {
        let config = try ServiceConfig.load(path: configPath)
        let keys = config.keys ?? .init()
        let maxAge = TimeInterval(keys.maxAgeSeconds ?? 30 * 24 * 3600), maxBytes = (keys.maxStoredMegabytes ?? 32 * 1024) << 20
        let shared: PostgresStore?
        let store: any EvaluationKeyStore
        if let database = config.database {
            let settings = try database.settings()
            let sealing = try StoreSealing.load(path: database.keyEncryptionKeyFile ?? "store.kek")
            let connected = try await PostgresStore.connect(settings, sealing: sealing, logger: logger)
            logger.info("shared store connected", metadata: ["database": .string(settings.redacted)])
            shared = connected
            store = PostgresEvaluationKeyStore(store: connected, maxAge: maxAge, maxBytes: maxBytes)
        } else {
            shared = nil
            store = try SQLiteEvaluationKeyStore(path: keys.database ?? "keys.sqlite", maxAge: maxAge, maxBytes: maxBytes)
        }
        sharedStore = shared
        let metrics = metrics ?? ServiceMetrics()
        let cache = EvaluationKeyCache(capacity: (keys.cacheMegabytes ?? 512) << 20)
        let width = config.concurrentQueries ?? 2
        let queueTimeout = Duration.milliseconds(Int64((config.http?.queueTimeoutSeconds ?? 2) * 1000))
        let pool = pool ?? ComputePool(width: width, limits: .init(queryQueue: width * (config.http?.queuedQueriesPerSlot ?? 8), keyQueue: 16, keyWidth: 1, queueTimeout: queueTimeout))
        let executor = try makeExecutor?(ExecutorEnvironment(keyStore: store, sharedStore: shared)) ?? LocalShardExecutor(keyStore: store, cache: cache, pool: pool,
                                                                      threads: config.computeThreads, metrics: metrics)
        var limits = LookupAPI.Limits()
        limits.maxKeyBytes = keys.maxKeyBytes ?? limits.maxKeyBytes
        let registry = UseCaseRegistry()
        self.configPath = configPath
        self.registry = registry
        self.keyStore = store
        self.executor = executor
        self.metrics = metrics
        self.pool = pool
        self.api = LookupAPI(registry: registry, keyStore: store, keyCache: cache, executor: executor, pool: pool,
                             limits: limits, metrics: metrics, logger: logger)
        self.tiers = Mutex(config.tierByToken)
        self.logger = logger
        let privacyPass = config.privacyPass ?? .init()
        issuerNames = privacyPass.issuerNames
        issuanceLimiter = IssuanceLimiter(rates: config.issueRates)
        http = config.http ?? .init()
        bodies = http.bodyBounds
        if let settings = config.gateway, settings.enabled ?? true {
            gateway = (settings, try settings.makeKeyRing(shared: shared != nil), settings.makeReplayCache())
            gatewayOrigin = settings.targets.flatMap { $0.isEmpty ? nil : OriginGatewayTarget(targets: $0, timeoutSeconds: settings.targetTimeoutSeconds ?? 30) }
        } else {
            gateway = nil
            gatewayOrigin = nil
        }
        reportStore = try config.makeReportStore(shared: shared)
        if let reports = config.reports, reports.enabled ?? true {
            reporterCredentials = try ReporterCredential.load(path: reports.reporterKeyFile ?? "reporter.key")
        } else {
            reporterCredentials = nil
        }
        provider = (config.reports, config.callDirectory, config.urlFilter)
        let perHour = config.reports?.reportsPerHour ?? 30
        reportLimiter = IssuanceLimiter(rates: ["reporter": .init(perSecond: perHour / 3600, burst: Double(config.reports?.reportBurst ?? 10))])
        if privacyPass.enabled ?? true {
            let lifetime = TimeInterval(privacyPass.keyLifetimeSeconds ?? 30 * 86400)
            let overlap = TimeInterval(privacyPass.keyOverlapSeconds ?? 2 * 86400)
            let maxPerKey = privacyPass.maxNoncesPerKey ?? 100_000_000
            if let shared {
                // The ring starts empty and `apply` loads it (creating keys once for all coordinators).
                issuerKeys = try IssuerKeyRing(lifetime: lifetime, overlap: overlap)
                nonces = PostgresNonceStore(store: shared, maxPerKey: maxPerKey)
            } else {
                issuerKeys = try IssuerKeyRing(directory: privacyPass.keyDirectory ?? "issuer-keys", lifetime: lifetime, overlap: overlap)
                nonces = try SQLiteNonceStore(path: privacyPass.nonceDatabase ?? "nonces.sqlite", maxPerKey: maxPerKey)
            }
            if let names = issuerNames {
                logger.warning("privacyPass.issuerNames is set: tokens whose challenge names another issuer get 401; the issuer name devices use is undocumented, so this may refuse real phones",
                               metadata: ["issuerNames": "\(names.count)"])
            }
        } else {
            logger.warning("Privacy Pass is disabled: the PIR endpoints accept requests without tokens")
            issuerKeys = nil
            nonces = nil
        }
        _ = try await apply(config, failFast: true)
        try await ensureGatewayKeys()
        metrics.recordKeyStore(try await store.usage())
    }

    /// Re-reads the config file and loads every use case as its newest version (SPEC-PIR §7.9). Queries in
    /// flight keep the version they started with; a use case that fails to load keeps its previous versions.
    /// Returns the names of use cases that failed.
    @discardableResult
    public func reload() async throws -> [String] {
        await executor.configurationReloaded()
        return try await apply(try ServiceConfig.load(path: configPath), failFast: false)
    }

    private func apply(_ config: ServiceConfig, failFast: Bool) async throws -> [String] {
        tiers.withLock { $0 = config.tierByToken }
        issuanceLimiter.update(rates: config.issueRates)
        try await ensureIssuerKeys(tiers: config.users.map(\.tier))
        var failed: [String] = []
        let wanted = Set(config.usecases.map(\.name))
        for name in registry.names where !wanted.contains(name) {
            for old in registry.remove(name: name) { await executor.retire(useCase: name, configID: old.configuration.configID) }
            logger.info("use case removed", metadata: ["usecase": .string(name)])
        }
        for useCase in config.usecases {
            let keep = useCase.versionCount ?? 2
            if keep == 0 {
                for old in registry.remove(name: useCase.name) {
                    await executor.retire(useCase: useCase.name, configID: old.configuration.configID)
                }
                continue
            }
            do {
                // Parameter files and checksums: off the concurrency pool. The shards are read as they are installed.
                let loaded = try await ComputePool.detached { try UseCaseLoader.load(useCase) }
                try await executor.install(loaded)
                for old in registry.install(loaded.version, keep: keep) {
                    await executor.retire(useCase: useCase.name, configID: old.configuration.configID)
                }
                logger.info("use case loaded", metadata: [
                    "usecase": .string(useCase.name), "configId": .string(loaded.version.configIDHex),
                    "shards": .stringConvertible(loaded.shards.count),
                ])
            } catch {
                if failFast { throw error }
                logger.error("use case failed to load; previous versions kept",
                             metadata: ["usecase": .string(useCase.name), "error": .string("\(error)")])
                failed.append(useCase.name)
            }
        }
        return failed
    }

    /// Deletes expired evaluation keys, rotates issuer keys that are due, forgets the nonces of retired issuer
    /// keys, and updates the gauge. Returns the number of evaluation keys deleted.
    public func maintain() async throws -> Int {
        let purged = try await keyStore.purgeExpired()
        if purged > 0 { metrics.increment("callveil_evaluation_keys_expired_total", by: purged) }
        metrics.recordKeyStore(try await keyStore.usage())
        if let issuerKeys, let nonces {
            let tiers = Set(self.tiers.withLock { $0.values })
            if try await ensureIssuerKeys(tiers: Array(tiers)) {
                logger.info("issuer keys rotated")
                metrics.increment("callveil_issuer_key_rotations_total")
            }
            _ = try await nonces.forget(keyIDsNotIn: issuerKeys.liveKeyIDs)
        }
        if try await ensureGatewayKeys() {
            logger.info("gateway keys rotated")
            metrics.increment("callveil_ohttp_key_rotations_total")
        }
        if let gateway { metrics.set("callveil_ohttp_replay_cache_entries", gateway.replay.usage.entries) }
        return purged
    }

    /// Creates the gateway's first key or a successor when due (once for every coordinator on the shared store,
    /// and loads what others decided); returns whether keys changed.
    @discardableResult
    private func ensureGatewayKeys() async throws -> Bool {
        try await gateway?.keys.ensure(sharedStore: sharedStore) ?? false
    }

    /// Makes the issuer keys current for `tiers`: in the shared store (decided once for every coordinator, and
    /// loaded with what others decided), else in the key directory. Returns whether keys were created or dropped.
    @discardableResult
    private func ensureIssuerKeys(tiers: [String]) async throws -> Bool {
        guard let issuerKeys else { return false }
        if let sharedStore { return try await PostgresRotatingKeyStore<IssuerKeyKind>(store: sharedStore).ensure(issuerKeys, groups: tiers) }
        return try issuerKeys.ensure(tiers: tiers)
    }

    /// The Privacy Pass verifier of the PIR endpoints, when authentication is on.
    public nonisolated var verifier: PrivacyPassVerifier? {
        guard let issuerKeys, let nonces else { return nil }
        return PrivacyPassVerifier(keys: issuerKeys, nonces: nonces, issuerNames: issuerNames)
    }

    /// The router of the public port: the PIR endpoints and the token issuer.
    public nonisolated func makeRouter(inFlight: InFlightLimitMiddleware? = nil) -> Router<LookupRequestContext> {
        let router = Router(context: LookupRequestContext.self)
        let inFlight = inFlight ?? http.inFlightLimit
        LookupRoutes.add(to: router, api: api, metrics: metrics, verifier: verifier, bodies: bodies, inFlight: inFlight,
                         maxPerUser: http.maxRequestsPerUser ?? 4)
        let open = LookupRoutes.openGroup(of: router, bodies: bodies, inFlight: inFlight, metrics: metrics)
        if let issuerKeys {
            PrivacyPassRoutes.add(to: open, keys: issuerKeys, limiter: issuanceLimiter) { [self] token in self.tier(of: token) }
        }
        addProviderRoutes(to: open)
        return router
    }

    /// The tier of a user token in the current config (nil: unknown token).
    private nonisolated func tier(of userToken: String) -> String? { tiers.withLock { $0[userToken] } }

    /// The report, Call Directory and URL-filter routes that are configured.
    private nonisolated func addProviderRoutes(to router: RouterGroup<LookupRequestContext>) {
        guard let reportStore else { return }
        if let reporterCredentials, let reports = provider.reports {
            ReportRoutes.add(to: router, settings: .init(store: reportStore, credentials: reporterCredentials, limiter: reportLimiter,
                                                         maxReportBytes: reports.maxReportBytes ?? 16384,
                                                         tierOf: { [self] token in self.tier(of: token) }, metrics: metrics))
        }
        if let callDirectory = provider.callDirectory {
            CallDirectoryRoutes.add(to: router, store: reportStore, maxEntriesPerPage: callDirectory.maxEntriesPerPage ?? 20_000, metrics: metrics)
        }
        if let urlFilter = provider.urlFilter {
            URLFilterRoutes.add(to: router, prefilterDirectory: urlFilter.prefilterDirectory, metrics: metrics)
            ReportRoutes.addURLReports(to: router, store: reportStore, verifier: verifier, maxURLs: urlFilter.maxURLsPerReport ?? 100, metrics: metrics)
        }
    }

    /// The router of the public port: `makeRouter()`'s routes and, when the gateway is on, its key configurations
    /// and encapsulated requests, answered in-process through a router of their own (or by the configured
    /// targets).
    public nonisolated func makePublicRouter() -> Router<LookupRequestContext> {
        let inFlight = http.inFlightLimit
        let router = makeRouter(inFlight: inFlight)
        guard let gateway else { return router }
        let target: any GatewayTarget = gatewayOrigin ?? InProcessGatewayTarget(router: makeRouter(), logger: logger)
        var refresh: (@Sendable () async throws -> Void)?
        if let sharedStore { refresh = { [keys = gateway.keys] in _ = try await keys.ensure(sharedStore: sharedStore) } }
        let sharedReplay = sharedStore.map { PostgresReplayStore(store: $0, window: gateway.replay.window) }
        ObliviousGatewayRoutes.add(to: router, gateway: ObliviousGateway(keys: gateway.keys, replay: gateway.replay, target: target,
                                                                         metrics: metrics, logger: logger, refresh: refresh,
                                                                         sharedReplay: sharedReplay, sizeClasses: gateway.settings.sizeClasses),
                                   keysPath: gateway.settings.keysPath, requestPath: gateway.settings.gatewayPath,
                                   bodies: bodies, inFlight: inFlight, metrics: metrics)
        return router
    }

    /// Stops the gateway's connections to its targets.
    public nonisolated func shutdownGateway() async {
        await gatewayOrigin?.shutdown()
    }

    /// The HTTP application on `host:port` (at most `http.maxConnections` connections, each request read within
    /// `http.requestTimeoutSeconds`) with the admin listener (`/healthz`, `/metrics` on `http.adminHost:adminPort`)
    /// and the background services (key expiry, reload on SIGHUP when `reloadOnSIGHUP`); `onServerRunning` and
    /// `onAdminRunning` receive the bound ports.
    public nonisolated func makeApplication(host: String, port: Int, reloadOnSIGHUP: Bool = false,
                                            onAdminRunning: @escaping @Sendable (Int) async -> Void = { _ in },
                                            onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in })
        throws -> some ApplicationProtocol {
        let adminRouter = Router()
        AdminRoutes.add(to: adminRouter, registry: registry, metrics: metrics, executor: executor)
        let adminPort = http.adminPort ?? 9090
        let admin = Application(router: adminRouter,
                                configuration: .init(address: .hostname(http.adminHost ?? "127.0.0.1", port: adminPort), serverName: "CallVeil"),
                                onServerRunning: { channel in await onAdminRunning(channel.localAddress?.port ?? adminPort) },
                                logger: logger)
        var services: [any Service] = [admin, MaintenanceService(logger: logger) { [self, logger] in
            let purged = try await self.maintain()
            if purged > 0 { logger.info("expired evaluation keys deleted", metadata: ["count": .stringConvertible(purged)]) }
        }]
        if reloadOnSIGHUP { services.append(ReloadOnSignalService(server: self, logger: logger)) }
        let metrics = self.metrics
        let timeout = TimeAmount.milliseconds(Int64((http.requestTimeoutSeconds ?? 30) * 1000))
        let connections = ClientConnections()
        let connectionGuard = PublicListener.connectionGuard(http) { reason in
            metrics.increment("callveil_http_connections_closed_total", dimensions: [("reason", reason)])
        }
        let server = try PublicListener.server(http, idleTimeout: timeout, connectionGuard: connectionGuard) {
            [RequestDeadlineHandler(timeout: timeout, connectionGuard: connectionGuard) { metrics.increment("callveil_http_request_timeouts_total") },
             ClientDisconnectHandler(connections: connections)]
        }
        let responder = CancelOnDisconnectResponder(inner: makePublicRouter().buildResponder(), connections: connections, metrics: metrics)
        return Application(responder: responder, server: server,
                           configuration: .init(address: .hostname(host, port: port), serverName: "CallVeil",
                                                availableConnectionsDelegate: MaximumAvailableConnections(http.maxConnections ?? 1024)),
                           services: services,
                           onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
                           logger: logger)
    }
}
