import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import LookupEngine
import LookupStorage
import NIOCore
import ServiceCore
import ServiceLifecycle
import Tracing

/// `callveil gateway`: a stand-alone Oblivious HTTP gateway in front of lookup services on other hosts. It
/// publishes its key configurations, opens encapsulated requests and forwards them to the allow-listed targets
/// of the config's `gateway` section only; keys in the key directory or, with a `database`, in the shared store
/// (one key ring for several gateways). `/healthz` and `/metrics` are on the admin listener.
public final class GatewayServer: Sendable {
    /// The settings.
    public let settings: ServiceConfig.Gateway
    /// Listener settings.
    public let http: ServiceConfig.HTTPSettings
    /// The keys.
    public let keys: GatewayKeyRing
    /// Metrics.
    public let metrics: ServiceMetrics
    private let replay: GatewayReplayCache
    private let target: OriginGatewayTarget
    private let sharedStore: PostgresStore?
    private let logger: Logger

    /// Reads the config (its `gateway` section must name targets), opens the key store and makes the keys current.
    public init(configPath: String, tracer: (any Tracer)? = nil, logger: Logger) async throws {
        let config = try ServiceConfig.load(path: configPath)
        guard let settings = config.gateway, let targets = settings.targets, !targets.isEmpty else {
            throw ConfigError("\(configPath): a stand-alone gateway needs gateway.targets")
        }
        self.settings = settings
        http = config.http ?? .init()
        metrics = ServiceMetrics(tracer: tracer)
        if let database = config.database {
            let databaseSettings = try database.settings()
            sharedStore = try await PostgresStore.connect(databaseSettings, sealing: try StoreSealing.load(path: database.keyEncryptionKeyFile ?? "store.kek"),
                                                          logger: logger)
        } else {
            sharedStore = nil
        }
        keys = try settings.makeKeyRing(shared: sharedStore != nil)
        replay = settings.makeReplayCache()
        target = OriginGatewayTarget(targets: targets, timeoutSeconds: settings.targetTimeoutSeconds ?? 30, tracer: tracer)
        self.logger = logger
        try await ensureKeys()
    }

    /// Creates the first key or a successor when due; returns whether keys changed.
    @discardableResult
    public func ensureKeys() async throws -> Bool {
        try await keys.ensure(sharedStore: sharedStore)
    }

    /// The gateway's public router.
    public func makeRouter() -> Router<LookupRequestContext> {
        let router = Router(context: LookupRequestContext.self)
        router.add(middleware: RequestObserverMiddleware(metrics: metrics))
        var refresh: (@Sendable () async throws -> Void)?
        if sharedStore != nil { refresh = { @Sendable [self] in _ = try await self.ensureKeys() } }
        let sharedReplay = sharedStore.map { PostgresReplayStore(store: $0, window: replay.window) }
        ObliviousGatewayRoutes.add(to: router, gateway: ObliviousGateway(keys: keys, replay: replay, target: target, metrics: metrics,
                                                                         logger: logger, refresh: refresh, sharedReplay: sharedReplay,
                                                                         sizeClasses: settings.sizeClasses),
                                   keysPath: settings.keysPath, requestPath: settings.gatewayPath,
                                   bodies: http.bodyBounds, inFlight: http.inFlightLimit, metrics: metrics)
        return router
    }

    /// The application on `host:port` with the admin listener (`http.adminHost:adminPort`, or `admin` when given)
    /// and hourly key upkeep. A failure to bind either names its address (`ListenerError`).
    public func makeApplication(host: String, port: Int, admin: (host: String?, port: Int?) = (nil, nil),
                                            onAdminRunning: @escaping @Sendable (Int) async -> Void = { _ in },
                                onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some Service {
        let adminRouter = Router()
        let keys = self.keys, metrics = self.metrics
        adminRouter.get("/healthz") { _, _ -> Response in
            let ids = keys.entries.map { String($0.key.keyID) }.joined(separator: ",")
            return Response(status: keys.gateway == nil ? .serviceUnavailable : .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: "{\"status\":\"\(keys.gateway == nil ? "no keys" : "ok")\",\"gatewayKeyIds\":[\(ids)]}")))
        }
        AdminRoutes.addMetrics(to: adminRouter, metrics: metrics)
        let adminHost = admin.host ?? http.adminHost ?? "127.0.0.1", adminPort = admin.port ?? http.adminPort ?? 9090
        let adminApplication = Application(router: adminRouter,
                                           configuration: .init(address: .hostname(adminHost, port: adminPort), serverName: "CallVeil"),
                                           onServerRunning: { channel in await onAdminRunning(channel.localAddress?.port ?? adminPort) }, logger: logger)
        let logger = self.logger
        let upkeep = MaintenanceService(logger: logger) { [self] in
            if try await self.ensureKeys() {
                logger.info("gateway keys rotated")
                metrics.increment("callveil_ohttp_key_rotations_total")
            }
        }
        let timeout = TimeAmount.milliseconds(Int64((http.requestTimeoutSeconds ?? 30) * 1000))
        let connectionGuard = PublicListener.connectionGuard(http) { reason in
            metrics.increment("callveil_http_connections_closed_total", dimensions: [("reason", reason)])
        }
        let server = try PublicListener.server(http, idleTimeout: timeout, connectionGuard: connectionGuard) {
            [RequestDeadlineHandler(timeout: timeout, connectionGuard: connectionGuard) { metrics.increment("callveil_http_request_timeouts_total") }]
        }
        let app = Application(responder: makeRouter().buildResponder(), server: server,
                           configuration: .init(address: .hostname(host, port: port), serverName: "CallVeil",
                                                availableConnectionsDelegate: MaximumAvailableConnections(http.maxConnections ?? 1024)),
                           services: [ListenerService(adminApplication, listener: "admin listener", host: adminHost, port: adminPort, logger: logger), upkeep],
                           onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) }, logger: logger)
        return ListenerService(app, listener: "public port", host: host, port: port,
                               shutdown: (connectionGuard, http.shutdownGrace), logger: logger)
    }

    /// Closes the connections to the targets and the shared store.
    public func shutdown() async {
        await target.shutdown()
        await sharedStore?.shutdown()
    }
}
