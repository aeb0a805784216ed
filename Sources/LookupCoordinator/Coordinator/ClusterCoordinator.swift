import ClusterTransport
import Foundation
import Logging
import LookupEngine
import LookupProtocol
import LookupWorker
import Synchronization
import ZeroMQ

/// The coordinator's shard executor (`callveil coordinator`, and `callveil serve` with embedded workers): a
/// ROUTER socket (CURVE server with a ZAP allow-list across hosts) to which workers connect.
///
/// It is level-triggered: it keeps a *desired state* (every shard with the SHA-256 of its content, and the
/// workers that must hold it) and, on every worker heartbeat, compares it with the *actual state* the heartbeat
/// reports, re-sending with back-off whatever is missing (assigns, drops). Every message is idempotent and none
/// has to arrive: a lost assign, chunk or drop is simply sent again. Queries go to a replica that reports the
/// desired content, or, while new content is still loading, to one holding the previous content.
public final class ClusterCoordinator: ShardExecutor {
    /// Coordinator settings.
    public struct Options: Sendable {
        /// Endpoint to bind (`tcp://0.0.0.0:5555`, `inproc://callveil`).
        public var bind: String
        /// Copies of each shard (capped by the number of workers).
        public var replication = 2
        /// Time for one worker to answer a query before it is retried elsewhere.
        public var requestTimeout: Duration = .seconds(10)
        /// A worker not heard from for this long is dead.
        public var heartbeatTimeout: Duration = .seconds(3)
        /// Replicas tried per query.
        public var maxAttempts = 3
        /// Uncompressed bytes per transfer chunk.
        public var transferChunkBytes = 1 << 20
        /// Where the shard files workers fetch are kept (one file per content hash, read a chunk at a time); nil holds
        /// them in memory. A service keeps them on disk, so its memory holds each shard once, in a worker. The
        /// coordinator holds the directory (`DirectoryLock`) until it stops: a second one given it fails to start.
        public var spoolDirectory: String?
        /// The coordinator's CURVE key pair and the workers it admits (public key → worker id); required across hosts.
        public var curve: (keys: CurveKeyPair, allowedWorkers: [String: String])?
        /// Re-reads the allow-list (public key → worker id) when the service config is reloaded (SIGHUP).
        public var allowList: (@Sendable () throws -> [String: String])?
        /// First re-send delay of an unanswered assign or drop; doubles per attempt up to `resendMax`.
        public var resendBase: Duration = .seconds(1)
        /// Longest re-send delay.
        public var resendMax: Duration = .seconds(8)
        /// Where the desired state is kept.
        public var desiredStore: any DesiredStateStore = InMemoryDesiredStateStore()
        /// Drops a fraction of control messages (tests and drills).
        public var faults: LinkFaults?
        /// Where cluster counters are recorded.
        public var metrics: ServiceMetrics?
        /// Queries waiting for a replica's credit at most; beyond, 503 at once (the coordinator sheds load instead
        /// of queueing: a queue longer than about a second of work only adds latency for everyone, `make overload`).
        public var maxWaitingQueries = 64
        /// Longest wait for a replica's credit before a query is answered 503.
        public var queueTimeout: Duration = .seconds(2)
        /// Pushes each uploaded key to the workers its owner's queries go to. Off where the workers read the
        /// service's own parsed-key cache (`callveil serve`'s embedded workers): the upload has put the key there,
        /// and a push would only copy its bytes through the socket for a worker that finds it cached.
        public var pushesKeys = true

        /// Settings binding `bind`.
        public init(bind: String) { self.bind = bind }
    }

    /// A query sent to a worker; `continuation` is nil once its client went away (the entry then only holds the
    /// worker's credit until the worker answers).
    struct Pending {
        var continuation: CheckedContinuation<ProtoPIRResponse, any Error>?
        let worker: String
    }

    struct State {
        var workers: [String: WorkerRecord] = [:]
        var routes: [[UInt8]: String] = [:]
        var desired = DesiredState()
        /// Content of each desired shard, for transfers (in memory, or spooled to `Options.spoolDirectory`).
        var sources: [ShardKey: TransferSource] = [:]
        /// For a shard whose content a data update replaced: the difference from the content before, sent to a
        /// worker that still holds that (see `ShardPatch`).
        var patches: [ShardKey: ShardPatch] = [:]
        /// Content hashes being spooled by an install not yet recorded in `sources` (kept when the spool is pruned).
        var spooling: [[UInt8]: Int] = [:]
        var pending: [UInt64: Pending] = [:]
        /// Queries waiting for credit.
        var line = CreditLine()
        /// Membership or shards changed: placement is recomputed on the next pass.
        var planDirty = false
        var stopped = false
        /// Key pushes sent (one per worker per key).
        var keyPushes = 0
        /// Whether this coordinator decides placement (see `steer`).
        var leading = false
        /// When the leader last recorded the workers it sees in the store.
        var workersRecordedAt: ContinuousClock.Instant?
    }

    let state = Mutex(State())
    let options: Options
    let keyStore: any EvaluationKeyStore
    let logger: Logger
    let loop = Mutex<SocketLoop?>(nil)
    let zap: ZAPAuthenticator?
    private let monitor = Mutex<Task<Void, Never>?>(nil)
    private let steering = Mutex<Task<Void, Never>?>(nil)
    /// The hold on the spool directory, released when the coordinator stops.
    private let spoolLock: Mutex<DirectoryLock?>
    /// The bound endpoint (a `tcp://…:0` bind resolved to its port).
    public let endpoint: String
    /// Whether libzmq enforces the ZAP domain (handshakes fail when the authenticator is down); the coordinator
    /// refuses unauthenticated messages either way.
    public let zapEnforced: Bool

    /// Starts the coordinator socket in `context`. It leads placement once its desired-state store says so
    /// (at once with the in-memory store; with a shared store, when it holds the leader lock).
    public init(context: ZMQContext, options: Options, keyStore: any EvaluationKeyStore, logger: Logger) throws {
        self.options = options
        self.keyStore = keyStore
        self.logger = logger
        spoolLock = Mutex(try options.spoolDirectory.map { try DirectoryLock(directory: $0) })
        let refusals = RefusalLog(logger: logger, metrics: options.metrics)
        zap = try options.curve.map {
            try ZAPAuthenticator(context: context, allowed: $0.allowedWorkers) { address, mechanism in
                refusals.refused(address: address, mechanism: mechanism)
            }
        }
        let box = WeakBox()
        let enforced = Mutex(false)
        let socketLoop = try SocketLoop(context: context, kind: .router, name: "callveil-coordinator", setup: { socket in
            try socket.set(33, 1)  // ZMQ_ROUTER_MANDATORY: unroutable sends fail instead of vanishing
            try socket.setMaxMessageSize(ClusterLimits.maxFrameBytes)
            if let curve = options.curve {
                let on = try curve.keys.configureServer(socket, zapDomain: "callveil")
                enforced.withLock { $0 = on }
            }
            try socket.bind(options.bind)
            return socket.lastEndpoint
        }, onMessage: { frames, peer in box.value?.receive(frames, userID: peer.userID, connection: peer.descriptor) },
           onDisconnect: { descriptor in box.value?.connectionClosed(descriptor) })
        endpoint = socketLoop.endpoint
        zapEnforced = enforced.withLock { $0 }
        loop.withLock { $0 = socketLoop }
        box.value = self
        options.metrics?.addCollector { [weak self] metrics in self?.collect(into: metrics) }
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                self?.tick()
            }
        }
        monitor.withLock { $0 = task }
        let steering = Task { [weak self] in
            while !Task.isCancelled {
                await self?.steer()
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        self.steering.withLock { $0 = steering }
    }

    /// Stops routing and closes the socket; queries in flight fail. A leader gives the leadership up at once.
    public func stop() async {
        shutdown()
        await options.desiredStore.stop()
    }

    /// `stop()` for synchronous callers.
    public func shutdown() {
        monitor.withLock { $0?.cancel() }
        steering.withLock { $0?.cancel() }
        let (pending, waiters) = state.withLock { s in
            s.stopped = true
            defer { s.pending.removeAll() }
            return (Array(s.pending.values), s.line.removeAll())
        }
        for p in pending { p.continuation?.resume(throwing: EngineError(.unavailable, "coordinator stopping")) }
        for waiter in waiters { waiter.continuation.resume(returning: Reservation.unheld) }
        loop.withLock { $0?.stop() }
        spoolLock.withLock { $0 = nil }
    }


    /// Connections the CURVE allow-list refused.
    public var refusedConnections: Int { zap?.refusedCount ?? 0 }

    /// One pass of the control loop: dead workers out, placement recomputed if needed, every worker reconciled.
    func tick() {
        expireWorkers()
        reconcileAll()
    }

    func send(to worker: String, _ message: ClusterMessage) {
        guard let route = state.withLock({ $0.workers[worker]?.route }) else { return }
        send(route: route, message)
    }

    func send(route: [UInt8], _ message: ClusterMessage) {
        if options.faults?.drops(message) == true { return }
        loop.withLock { $0 }?.send([route, ClusterCodec.encode(message)])
    }

    func count(_ label: String, _ dimensions: [(String, String)] = [], by amount: Int = 1) {
        options.metrics?.increment(label, dimensions: dimensions, by: amount)
    }

    /// Logs and counts a message from a worker that was refused.
    func reject(_ why: String, worker: String? = nil) {
        count("callveil_cluster_messages_rejected_total", [("reason", why.replacingOccurrences(of: " ", with: "_"))])
        logger.warning("refused a message from a worker", metadata: ["reason": .string(why), "worker": .string(worker ?? "?")])
    }

    // MARK: Messages from workers

    /// Handles one message from a worker as the socket delivers it: `[routing id, payload]`, the CURVE user id
    /// the ZAP handler attached and the descriptor of the connection it came over. Every field is validated before
    /// use; anything else is counted and dropped. Public so the fuzz harnesses can feed frames without a socket.
    public func receive(_ frames: [[UInt8]], userID: String?, connection: Int32? = nil) {
        guard frames.count == 2 else { return reject("frame count") }
        let route = frames[0]
        let message: ClusterMessage
        do { message = try ClusterCodec.decode(frames[1]) } catch { return reject("malformed") }
        if options.faults?.drops(message) == true { return }
        // Who sent it: with CURVE, the worker id its key is listed under (set by the ZAP handler, so a worker
        // cannot claim another's); without (inproc, loopback tests), the id it introduced itself with.
        let name: String
        if let zap {
            guard let userID, zap.allowedUserIDs.contains(userID) else { return reject("unauthenticated or revoked") }
            name = userID
        } else if case .hello(let hello)? = message.body {
            guard ClusterLimits.isValidWorkerID(hello.workerID) else { return reject("worker id") }
            name = hello.workerID
        } else {
            guard let known = state.withLock({ $0.routes[route] }) else { return reject("unknown connection") }
            name = known
        }
        if case .hello(let hello)? = message.body { return self.hello(from: name, route: route, connection: connection, hello) }
        // Everything else must come over the worker's current connection.
        guard state.withLock({ $0.workers[name]?.route == route }) else { return reject("stale connection", worker: name) }
        switch message.body {
        case .reply(let reply)?: self.reply(from: name, id: message.requestID, reply)
        case .keyRequest(let request)?: keyRequest(from: name, id: message.requestID, request)
        case .transferRequest(let request)?: transferRequest(from: name, request)
        case .loaded(let loaded)?: shardReport(from: name, loaded)
        case .goodbye?: removeWorker(name, reason: "drained")
        default: reject("unexpected message", worker: name)
        }
    }
}

/// A weak reference the socket loop's callback holds (the loop is created before `self` exists).
final class WeakBox: @unchecked Sendable {
    weak var value: ClusterCoordinator?
}
