import Gateway
import Hummingbird
import Logging
import LookupEngine
import LookupStorage
import ServiceCore
import Tracing

/// The Oblivious HTTP gateway as one server runs it, when it is on: its settings as read at start, its keys and
/// replay cache, and the origins it forwards to (else it answers in-process).
public struct GatewaySetup: Sendable {
    /// The settings as read at start.
    public let settings: ServiceConfig.Gateway
    /// Its keys.
    public let keys: GatewayKeyRing
    /// Its replay cache.
    public let replay: GatewayReplayCache
    /// The gateway's target when it forwards to other origins.
    let origin: OriginGatewayTarget?

    /// The gateway `config` turns on (nil when it is off).
    init?(config: ServiceConfig, shared: PostgresStore?, tracer: (any Tracer)?) throws {
        guard let settings = config.gateway, settings.enabled ?? true else { return nil }
        self.settings = settings
        keys = try settings.makeKeyRing(shared: shared != nil)
        replay = settings.makeReplayCache()
        origin = settings.targets.flatMap { $0.isEmpty ? nil : OriginGatewayTarget(targets: $0, timeoutSeconds: settings.targetTimeoutSeconds ?? 30,
                                                                                      tracer: tracer) }
    }

    /// Adds the key configurations and the encapsulated-request endpoint to `router`; requests are answered by
    /// `inner` (the lookup routes in-process) unless origins are configured.
    func addRoutes(to router: Router<LookupRequestContext>, inner: @autoclosure () -> Router<LookupRequestContext>,
                   sharedStore: PostgresStore?, bodies: BodyAdmissionMiddleware.Bounds, inFlight: InFlightLimitMiddleware,
                   metrics: ServiceMetrics, logger: Logger) {
        let target: any GatewayTarget = origin ?? InProcessGatewayTarget(router: inner(), logger: logger)
        var refresh: (@Sendable () async throws -> Void)?
        if let sharedStore { refresh = { [keys] in _ = try await keys.ensure(sharedStore: sharedStore) } }
        let sharedReplay = sharedStore.map { PostgresReplayStore(store: $0, window: replay.window) }
        ObliviousGatewayRoutes.add(to: router, gateway: ObliviousGateway(keys: keys, replay: replay, target: target,
                                                                         metrics: metrics, logger: logger, refresh: refresh,
                                                                         sharedReplay: sharedReplay, sizeClasses: settings.sizeClasses),
                                   keysPath: settings.keysPath, requestPath: settings.gatewayPath,
                                   bodies: bodies, inFlight: inFlight, metrics: metrics)
    }
}
