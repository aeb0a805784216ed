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
    /// The process's parsed-key cache (`keys.cacheMegabytes`); executors in this process share it.
    public nonisolated let keyCache: EvaluationKeyCache
    /// The endpoints.
    public nonisolated let api: LookupAPI
    /// The public port's request-body bounds (port and connection budgets, minimum rate), shared by its routes.
    public nonisolated let bodies: BodyAdmissionMiddleware.Bounds
    /// Listener limits and the admin listener, as read at start (a reload does not move listeners).
    public nonisolated let http: ServiceConfig.HTTPSettings
    /// The public port's fair gate in front of PIR work, shared by its routers (direct and through the gateway).
    public nonisolated let gate: FairAdmission
    /// The public port's per-User-Identifier limit, shared by its routers.
    public nonisolated let perUser: PerUserLimitMiddleware
    /// Privacy Pass: issuer keys, spent nonces, tiers and issuance rates.
    public nonisolated let privacyPass: PrivacyPassSetup
    /// Reports, the Call Directory and the URL filter, as configured.
    public nonisolated let feeds: ProviderFeeds
    /// The Oblivious HTTP gateway, when it is on (as read at start).
    public nonisolated let gateway: GatewaySetup?
    /// Whether the configuration last loaded in full (`/readyz`, the reload metrics).
    public nonisolated let reloads: ReloadStatus
    private let logger: Logger

    /// Reads the config, opens the key store and loads every use case. `makeExecutor` builds the shard executor
    /// over the key store and the shared store (a cluster coordinator); nil runs queries in-process.
    public init(configPath: String, makeExecutor: (@Sendable (ExecutorEnvironment) throws -> any ShardExecutor)? = nil,
                logger: Logger) async throws {
        try await self.init(configPath: configPath, pool: nil, metrics: nil, makeExecutor: makeExecutor, logger: logger)
    }

    /// As above, with the compute pool and metrics given (an embedded cluster's workers share the HTTP layer's
    /// pool; a coordinator records into the same metrics).
    /// `executorsShareKeyCache` false (a coordinator whose workers are other processes): the service keeps no parsed
    /// keys, since nothing here would read them.
    public init(configPath: String, pool: ComputePool?, metrics: ServiceMetrics?,
                makeExecutor: (@Sendable (ExecutorEnvironment) throws -> any ShardExecutor)?, executorsShareKeyCache: Bool = true,
                logger: Logger) async throws {
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
        let cache = EvaluationKeyCache(capacity: executorsShareKeyCache ? (keys.cacheMegabytes ?? 512) << 20 : 0)
        let width = config.concurrentQueries ?? ComputePool.defaultWidth
        let queueTimeout = Duration.milliseconds(Int64((config.http?.queueTimeoutSeconds ?? 2) * 1000))
        let pool = pool ?? ComputePool(width: width, limits: .init(queryQueue: width * (config.http?.queuedQueriesPerSlot ?? 8), keyQueue: 16, keyWidth: 1, queueTimeout: queueTimeout), metrics: metrics)
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
        self.keyCache = cache
        self.api = LookupAPI(registry: registry, keyStore: store, keyCache: cache, executor: executor, pool: pool,
                             limits: limits, metrics: metrics, logger: logger)
        self.logger = logger
        http = config.http ?? .init()
        bodies = http.bodyBounds
        // In-process compute: two requests per compute slot, one computing while the other reads its key and is
        // checked, keep the pool busy; more only share the core with the compute and stretch every turn (four per
        // slot: the admitted p99 under a flood 520 -> 940-990 ms, with refusals at the end of the wait). A
        // coordinator's workers are other processes, whose own pools queue fairly; its gate only bounds its own work.
        let slots = http.maxRequestsProcessing ?? (executorsShareKeyCache ? 2 * pool.width : 64)
        // The gate's default wait unless set, never more than the compute queue's timeout.
        let maxWait = http.maxAdmissionWaitMilliseconds.map { Duration.milliseconds(Int64($0)) } ?? min(queueTimeout, FairAdmission.Limits.defaultMaxWait)
        gate = FairAdmission(limits: .init(slots: slots, maxWait: maxWait), metrics: metrics)
        perUser = PerUserLimitMiddleware(limit: http.maxRequestsPerUser ?? 4)
        privacyPass = try PrivacyPassSetup(config: config, shared: shared, logger: logger)
        feeds = try ProviderFeeds(config: config, shared: shared)
        gateway = try GatewaySetup(config: config, shared: shared, tracer: metrics.tracer)
        reloads = ReloadStatus(metrics: metrics)
        _ = try await apply(config, failFast: true)
        try await ensureGatewayKeys()
        metrics.recordKeyStore(try await store.usage())
        reloads.started()
        addCollectors()
    }

    /// Re-reads the config file and loads every use case as its newest version (SPEC-PIR §7.9). Queries in
    /// flight keep the version they started with; a use case that fails to load keeps its previous versions.
    /// Returns the names of use cases that failed.
    @discardableResult
    public func reload() async throws -> [String] {
        await executor.configurationReloaded()
        do {
            let failed = try await apply(try ServiceConfig.load(path: configPath), failFast: false)
            reloads.reloaded(failed: failed)
            return failed
        } catch {
            reloads.reloaded(failed: [], error: "\(error)")
            throw error
        }
    }

    /// Gauges read at each scrape: the replay cache, the key rings' schedules.
    private nonisolated func addCollectors() {
        let gateway = self.gateway, issuer = privacyPass.keys, maxNonces = privacyPass.maxNoncesPerKey
        metrics.addCollector { metrics in
            func record(_ ring: String, _ schedule: (rotationDue: Date, expiry: Date)?) {
                guard let schedule else { return }
                metrics.set("callveil_key_rotation_due_timestamp_seconds", schedule.rotationDue.timeIntervalSince1970, dimensions: [("ring", ring)])
                metrics.set("callveil_key_expiry_timestamp_seconds", schedule.expiry.timeIntervalSince1970, dimensions: [("ring", ring)])
            }
            if let gateway {
                metrics.set("callveil_ohttp_replay_cache_entries", gateway.replay.usage.entries)
                record("ohttp", gateway.keys.schedule)
            }
            record("issuer", issuer?.schedule)
            if let maxNonces { metrics.set("callveil_privacy_pass_nonces_per_key_limit", maxNonces) }
        }
    }

    private func apply(_ config: ServiceConfig, failFast: Bool) async throws -> [String] {
        privacyPass.update(config)
        for (tier, position) in config.userTokensNotBase64 {
            logger.warning("a user token is not base64: iOS does not fetch Privacy Pass tokens with it, so phones of that app get no lookups",
                           metadata: ["tier": .string(tier), "position": "\(position)"])
        }
        try await privacyPass.ensureKeys(tiers: config.users.map(\.tier), sharedStore: sharedStore)
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
        if let issuerKeys = privacyPass.keys, let nonces = privacyPass.nonces {
            if try await privacyPass.ensureKeys(tiers: privacyPass.currentTiers, sharedStore: sharedStore) {
                logger.info("issuer keys rotated")
                metrics.increment("callveil_issuer_key_rotations_total")
            }
            _ = try await nonces.forget(keyIDsNotIn: issuerKeys.liveKeyIDs)
        }
        if try await ensureGatewayKeys() {
            logger.info("gateway keys rotated")
            metrics.increment("callveil_ohttp_key_rotations_total")
        }
        if let nonces = privacyPass.nonces { metrics.set("callveil_privacy_pass_nonces_stored", try await nonces.count()) }
        return purged
    }

    /// Creates the gateway's first key or a successor when due (once for every coordinator on the shared store,
    /// and loads what others decided); returns whether keys changed.
    @discardableResult
    private func ensureGatewayKeys() async throws -> Bool {
        try await gateway?.keys.ensure(sharedStore: sharedStore) ?? false
    }

    /// The Privacy Pass verifier of the PIR endpoints, when authentication is on.
    public nonisolated var verifier: PrivacyPassVerifier? { privacyPass.verifier }

    /// The router of the public port: the PIR endpoints and the token issuer.
    public nonisolated func makeRouter(inFlight: InFlightLimitMiddleware? = nil) -> Router<LookupRequestContext> {
        let router = Router(context: LookupRequestContext.self)
        let inFlight = inFlight ?? http.inFlightLimit
        LookupRoutes.add(to: router, api: api, metrics: metrics, verifier: verifier, bodies: bodies, inFlight: inFlight,
                         perUser: perUser, gate: gate)
        let open = LookupRoutes.openGroup(of: router, bodies: bodies, inFlight: inFlight, metrics: metrics)
        let privacyPass = self.privacyPass
        if let issuerKeys = privacyPass.keys {
            PrivacyPassRoutes.add(to: open, keys: issuerKeys, limiter: privacyPass.issuanceLimiter) { privacyPass.tier(of: $0) }
        }
        feeds.addRoutes(to: open, verifier: verifier, tierOf: { privacyPass.tier(of: $0) }, metrics: metrics)
        return router
    }

    /// The router of the public port: `makeRouter()`'s routes and, when the gateway is on, its key configurations
    /// and encapsulated requests, answered in-process through a router of their own (or by the configured
    /// targets).
    public nonisolated func makePublicRouter() -> Router<LookupRequestContext> {
        let inFlight = http.inFlightLimit
        let router = makeRouter(inFlight: inFlight)
        gateway?.addRoutes(to: router, inner: makeRouter(), sharedStore: sharedStore, bodies: bodies, inFlight: inFlight,
                           metrics: metrics, logger: logger)
        return router
    }

    /// Stops the gateway's connections to its targets.
    public nonisolated func shutdownGateway() async {
        await gateway?.origin?.shutdown()
    }

    /// The HTTP application on `host:port` (at most `http.maxConnections` connections, each request read within
    /// `http.requestTimeoutSeconds`) with the admin listener (`/healthz`, `/metrics` on `http.adminHost:adminPort`,
    /// or `admin` when given)
    /// and the background services (key expiry, reload on SIGHUP when `reloadOnSIGHUP`); `onServerRunning` and
    /// `onAdminRunning` receive the bound ports.
    public nonisolated func makeApplication(host: String, port: Int, reloadOnSIGHUP: Bool = false,
                                            admin: (host: String?, port: Int?) = (nil, nil),
                                            onAdminRunning: @escaping @Sendable (Int) async -> Void = { _ in },
                                            onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in })
        throws -> some Service {
        let adminRouter = Router()
        AdminRoutes.add(to: adminRouter, registry: registry, metrics: metrics, executor: executor, reloads: reloads)
        let adminHost = admin.host ?? http.adminHost ?? "127.0.0.1", adminPort = admin.port ?? http.adminPort ?? 9090
        let adminApplication = Application(router: adminRouter,
                                           configuration: .init(address: .hostname(adminHost, port: adminPort), serverName: "CallVeil"),
                                           onServerRunning: { channel in await onAdminRunning(channel.localAddress?.port ?? adminPort) },
                                           logger: logger)
        var services: [any Service] = [ListenerService(adminApplication, listener: "admin listener", host: adminHost, port: adminPort, logger: logger), MaintenanceService(logger: logger) { [self, logger] in
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
        let app = Application(responder: responder, server: server,
                           configuration: .init(address: .hostname(host, port: port), serverName: "CallVeil",
                                                availableConnectionsDelegate: MaximumAvailableConnections(http.maxConnections ?? 1024)),
                           services: services,
                           onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
                           logger: logger)
        return ListenerService(app, listener: "public port", host: host, port: port,
                               shutdown: (connectionGuard, http.shutdownGrace), logger: logger)
    }
}
