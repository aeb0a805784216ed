import BFV
import ClusterTransport
import Foundation
import Logging
import LookupEngine
import LookupProtocol
import PIR
import Synchronization
import ZeroMQ

/// A cluster worker (`callveil worker`): connects a DEALER socket to each coordinator it is given (a *link*,
/// CURVE-authenticated across hosts) and reports its actual state on every link every 500 ms (shards loaded with
/// their content hashes, transfers under way). It does what the assigns and drops of the leading coordinator
/// say, idempotently: an assign for content it holds is a no-op, for content on disk loads the file, otherwise
/// starts or resumes a transfer from the coordinator that sent the assign; a transfer that stalls is asked for
/// again. It answers shard queries from any coordinator with the in-process PIR core, on the link the query came
/// on, swaps new content in atomically (the old keeps answering until then), and fetches evaluation keys on a
/// cache miss from the coordinator whose query needs them.
public final class ClusterWorker: Sendable {
    /// Worker settings.
    public struct Options: Sendable {
        /// The coordinators' endpoints (`tcp://host:port` or `inproc://name`), one link each.
        public var coordinators: [String]
        /// The first coordinator's endpoint (setting it makes it the only one).
        public var coordinator: String {
            get { coordinators.first ?? "" }
            set { coordinators = [newValue] }
        }
        /// Where transferred shards are kept.
        public var dataDirectory: String
        /// Worker id, unique in the cluster (across hosts, the coordinator knows a worker by its CURVE key instead).
        public var workerID: String
        /// PIR threads per query (default: every core).
        public var threads: Int?
        /// Queries accepted at once (default: what the compute pool runs and queues, so that the pool's per-user
        /// round-robin orders them; beyond, queries wait at the coordinator).
        public var credit: Int?
        /// This worker's CURVE key pair and the coordinators' public keys: one for all, or one per coordinator in
        /// the order of `coordinators` (required across hosts).
        public var curve: (keys: CurveKeyPair, serverPublicKeys: [String])?
        /// Memory for parsed keys, bytes (`callveil worker --key-cache`).
        public var keyCacheBytes = 512 << 20
        /// The parsed-key cache (an embedded worker shares the service's, sized by `keys.cacheMegabytes`; nil: one of
        /// `keyCacheBytes` for this worker).
        public var keyCache: EvaluationKeyCache?
        /// Where a key missing from the cache is read (an embedded worker reads the service's store); nil: the worker
        /// asks the coordinator that sent the query, which reads its store and sends the key's bytes back.
        public var keyReader: (any EvaluationKeyReader)?
        /// Where PIR compute times are recorded (an embedded worker shares the service's metrics).
        public var metrics: ServiceMetrics?
        /// The compute pool (an embedded worker shares the service's; nil: one of width 2, 1 on one core, for this worker).
        public var pool: ComputePool?
        /// The longest wait for an answer to a chunk request before asking again (and the wait before the link's
        /// first round trip is known); otherwise a few round trips of the link, doubled per unanswered request.
        public var transferStall: Duration = .seconds(2)
        /// The shortest wait for an answer to a chunk request before asking again.
        public var transferRetryFloor: Duration = .milliseconds(200)
        /// Drops a fraction of control messages (tests and drills).
        public var faults: LinkFaults?
        /// Bytes of shard databases held in this process's memory; shards beyond it are served from their mapped
        /// scan files, paged by the kernel (nil: no limit, every shard in memory).
        public var memoryBudget: Int?
        /// Whether each shard's evaluation form is cached on disk as a scan file, so a restart maps it instead of
        /// rebuilding it (a shard over the memory budget needs it).
        public var scanCache = true
        /// Shard loads run at once (default: one per core).
        public var concurrentLoads: Int?

        /// Settings for a worker of one coordinator.
        public init(coordinator: String, dataDirectory: String, workerID: String) {
            self.init(coordinators: [coordinator], dataDirectory: dataDirectory, workerID: workerID)
        }

        /// Settings for a worker serving several coordinators.
        public init(coordinators: [String], dataDirectory: String, workerID: String) {
            self.coordinators = coordinators
            self.dataDirectory = dataDirectory
            self.workerID = workerID
        }
    }

    struct State {
        /// Content hash of each shard loaded and serving.
        var loaded: [ShardKey: [UInt8]] = [:]
        var transfers: [ShardKey: Transfer] = [:]
        /// Content being verified and installed.
        var loading: [ShardKey: [UInt8]] = [:]
        var contexts: [[UInt8]: Context] = [:]  // key-config hash -> context
        var resumed: [ShardKey: Int] = [:]
        /// Database bytes of each loaded shard, held in memory (counted against the budget) or mapped.
        var resident: [ShardKey: Int] = [:]
        var mapped: [ShardKey: Int] = [:]
        /// Memory reserved by loads under way (see `placeWithinBudget`).
        var reserved: [ShardKey: Int] = [:]
        /// Loads that mapped a verified scan file instead of rebuilding the evaluation form.
        var scanCacheLoads = 0
        var transfersStarted = 0
        var wholeShardFailures = 0
        /// Data updates taken as patches, and patches that did not apply (the whole shard was fetched).
        var patchesApplied = 0
        var patchesRefused = 0
        /// The coordinator's key-expiry cutoff applied (seconds since 1970), and the parsed keys it dropped.
        var keysExpiredBefore = 0.0
        var keysExpired = 0
        /// Queries being answered, by link and request id (each coordinator numbers its own), so that a
        /// `QueryCancel` can stop one.
        var queries: [QueryID: Task<Void, Never>] = [:]
        var stopped = false
        /// Round trips of chunk requests, by link.
        var roundTrips: [Int: RoundTripEstimate] = [:]
        /// Chunk requests asked again because no answer came in time.
        var transferRetries = 0
    }

    /// An open transfer. Its fields are only touched while holding the state lock; its `sink` only by the one
    /// chunk that claimed the transfer (`busy`), outside the lock, so the file I/O never holds up the heartbeat.
    final class Transfer: @unchecked Sendable {
        let assign: Callveil_Cluster_V1_AssignShard
        /// The link chunks are asked on: that of the latest assign (a new leader's assign moves it there).
        var link: Int
        let sha256: [UInt8]
        let sink: TransferSink
        /// Bytes received and verified (the sink's offset as of the last chunk settled).
        var offset: Int
        /// A chunk is being written.
        var busy = false
        var failures = 0
        /// The latest request: its number (a timer armed for an older one does nothing), when it was sent, the
        /// offset it asked for, and whether that offset had been asked for before (its answer is no round-trip
        /// sample then).
        var request = 0
        var requestedAt = ContinuousClock.now
        var requestedOffset: Int?
        var repeated = false
        /// Requests in a row that went unanswered in time (each doubles the next wait).
        var unanswered = 0
        /// The content of this shard the worker holds verified on disk, offered as a patch base while the transfer
        /// is at its start; nil once a chunk came or a patch failed (the whole shard is fetched then), so it is set
        /// only while `offset` is 0.
        var patchBase: [UInt8]?
        init(assign: Callveil_Cluster_V1_AssignShard, link: Int, sha256: [UInt8], sink: TransferSink, patchBase: [UInt8]?) {
            self.assign = assign
            self.link = link
            self.sha256 = sha256
            self.sink = sink
            self.offset = sink.offset
            self.patchBase = sink.offset == 0 ? patchBase : nil
        }
    }

    let state = Mutex(State())
    let options: Options
    let executor: LocalShardExecutor
    let keys: CoordinatorKeyReader
    let logger: Logger
    let files: ShardFiles
    let loads: LoadGate
    /// One thread for every transfer's chunk writes (each fsynced): run on Dispatch's global queue, dozens of
    /// transfers blocked in fsync at once took the threads that also wake sleeping tasks, and the heartbeat ran
    /// seconds late.
    let transferIO = DispatchQueue(label: "callveil-worker-transfer-io", qos: .utility)
    /// Random per start: tells the coordinator this is a new process.
    let incarnation = UInt64.random(in: 1...UInt64.max)
    /// One DEALER socket per coordinator, in the order of `options.coordinators`.
    private let links = Mutex<[SocketLoop]>([])
    /// The link of the query being answered, so that a key fetch it needs goes to the coordinator that asked.
    @TaskLocal static var queryLink: Int?
    private let heartbeat = Mutex<Task<Void, Never>?>(nil)

    /// Starts a worker in `context` and connects it.
    public init(context: ZMQContext, options: Options, logger: Logger) throws {
        self.options = options
        self.logger = logger
        self.files = ShardFiles(directory: options.dataDirectory)
        self.loads = LoadGate(limit: options.concurrentLoads ?? MulPirServer.coreCount)
        let keys = CoordinatorKeyReader { _, _, _ in }
        self.keys = keys
        self.executor = LocalShardExecutor(keyStore: options.keyReader ?? keys, cache: options.keyCache ?? EvaluationKeyCache(capacity: options.keyCacheBytes),
                                           pool: options.pool ?? ComputePool(width: ComputePool.defaultWidth, metrics: options.metrics), threads: options.threads,
                                           metrics: options.metrics)
        try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        guard !options.coordinators.isEmpty, options.coordinators.count <= 64 else {
            throw ConfigError("a worker needs between 1 and 64 coordinators, not \(options.coordinators.count)")
        }
        if let curve = options.curve, curve.serverPublicKeys.count != 1, curve.serverPublicKeys.count != options.coordinators.count {
            throw ConfigError("give one coordinator public key for all coordinators or one per coordinator")
        }
        // The routing id is new for every start, so a restarted worker never collides with its old connection.
        let routingID = "\(options.workerID)#\(String(incarnation, radix: 16))"
        var opened: [SocketLoop] = []
        do {
            for (link, endpoint) in options.coordinators.enumerated() {
                let serverKey = options.curve.map { $0.serverPublicKeys.count == 1 ? $0.serverPublicKeys[0] : $0.serverPublicKeys[link] }
                opened.append(try SocketLoop(context: context, kind: .dealer, name: "callveil-worker-\(options.workerID)-\(link)", setup: { socket in
                    try socket.set(5, string: routingID)  // ZMQ_ROUTING_ID
                    try socket.setMaxMessageSize(ClusterLimits.maxFrameBytes)
                    if let curve = options.curve, let serverKey { try curve.keys.configureClient(socket, serverPublicKey: serverKey) }
                    try socket.connect(endpoint)
                    return endpoint
                }, onMessage: { [weak self] frames, _ in self?.receive(frames, link: link) }))
            }
        } catch {
            for socket in opened { socket.stop() }
            throw error
        }
        links.withLock { $0 = opened }
        keys.sender = { [weak self] id, user, identifier in
            let request = ClusterMessage.with {
                $0.requestID = id
                $0.keyRequest = .with {
                    $0.user = user
                    $0.identifier = Data(identifier)
                }
            }
            // The coordinator whose query needs the key; without one (a fetch outside a query), every coordinator
            // is asked and the first answer is taken.
            if let link = Self.queryLink { self?.send(request, link: link) } else { self?.broadcast(request) }
        }
        options.metrics?.addCollector { [weak self] metrics in
            guard let self else { return }
            metrics.set("callveil_worker_shards", loadedShards.count)
        }
        sendHello()
        let task = Task { [weak self] in
            var last = ContinuousClock.now
            while !Task.isCancelled {
                do { try await Task.sleep(for: .milliseconds(500)) } catch { return }
                // A heartbeat this late risks the coordinator's timeout (3 s by default): say so, it is the clue.
                let gap = ContinuousClock.now - last
                if gap > .milliseconds(1500) {
                    self?.logger.warning("heartbeat late", metadata: ["seconds": "\(gap.components.seconds)"])
                }
                self?.sendHello()
                last = ContinuousClock.now
            }
        }
        heartbeat.withLock { $0 = task }
    }

    /// Says goodbye to every coordinator (they stop routing here) and closes the sockets.
    public func stop() {
        guard state.withLock({ s in defer { s.stopped = true }; return !s.stopped }) else { return }
        heartbeat.withLock { $0?.cancel() }
        broadcast(.with { $0.goodbye = .init() })
        Thread.sleep(forTimeInterval: 0.05)
        for socket in links.withLock({ $0 }) { socket.stop() }
    }

    /// Stops without a goodbye, as a crashed or unplugged worker would (for failure tests and drills).
    public func kill() {
        guard state.withLock({ s in defer { s.stopped = true }; return !s.stopped }) else { return }
        heartbeat.withLock { $0?.cancel() }
        for socket in links.withLock({ $0 }) { socket.stop() }
    }

    /// Transfers this worker resumed from a partial file, with the offset it resumed at.
    public var resumedTransfers: [ShardKey: Int] { state.withLock { $0.resumed } }

    /// Transfers started (fresh or resumed) since this worker started; 0 when every shard came from disk.
    public var transfersStarted: Int { state.withLock { $0.transfersStarted } }

    /// Chunk requests sent again because no answer came within the link's retry wait.
    public var transferRetries: Int { state.withLock { $0.transferRetries } }

    /// Whole-shard checksum failures detected (each reported to the coordinator and fetched again).
    public var wholeShardFailures: Int { state.withLock { $0.wholeShardFailures } }

    /// Data updates this worker took as patches, and patches it could not apply (then fetched whole).
    public var patches: (applied: Int, refused: Int) { state.withLock { ($0.patchesApplied, $0.patchesRefused) } }

    /// Database bytes held in memory and served from mapped scan files, and the loads that used a scan file.
    public var shardMemory: (resident: Int, mapped: Int, scanCacheLoads: Int) {
        state.withLock { s in (s.resident.values.reduce(0, +), s.mapped.values.reduce(0, +), s.scanCacheLoads) }
    }

    /// Shards loaded and verified.
    public var loadedShards: Set<ShardKey> { state.withLock { Set($0.loaded.keys) } }

    /// Parsed keys held now, and how many were dropped on the coordinator's expiry.
    public var keyCounts: (held: Int, expired: Int) { (executor.cache.count, state.withLock { $0.keysExpired }) }

    /// Shards loaded with their content hashes.
    public var loadedContent: [ShardKey: [UInt8]] { state.withLock { $0.loaded } }

    /// Sends on one link (a link index out of range sends nothing).
    func send(_ message: ClusterMessage, link: Int) {
        if options.faults?.drops(message) == true { return }
        let socket = links.withLock { $0.indices.contains(link) ? $0[link] : nil }
        socket?.send([ClusterCodec.encode(message)])
    }

    /// Sends on every link (heartbeats, shard reports, goodbyes).
    func broadcast(_ message: ClusterMessage) {
        let sockets = links.withLock { $0 }
        guard !sockets.isEmpty else { return }
        let bytes = ClusterCodec.encode(message)
        for socket in sockets where options.faults?.drops(message) != true { socket.send([bytes]) }
    }

    /// The heartbeat: the actual state, on every link.
    func sendHello() {
        guard let (loaded, transfers, expiredBefore) = state.withLock({ s -> ([ShardKey: [UInt8]], [ShardKey: (Int, Int, [UInt8])], Double)? in
            s.stopped ? nil : (s.loaded, s.transfers.mapValues { ($0.offset, $0.sink.totalBytes, $0.sha256) }, s.keysExpiredBefore)
        }) else { return }
        broadcast(.with {
            $0.hello = .with {
                $0.workerID = options.workerID
                $0.threads = UInt32(options.threads ?? MulPirServer.coreCount)
                $0.credit = UInt32(options.credit ?? executor.pool.width + executor.pool.limits.queryQueue)
                $0.incarnation = incarnation
                $0.keysExpiredBefore = expiredBefore
                $0.loaded = loaded.sorted { $0.key < $1.key }.map { key, sha in
                    var ref = key.ref
                    ref.sha256 = Data(sha)
                    return ref
                }
                $0.transfers = transfers.sorted { $0.key < $1.key }.map { key, progress in
                    var ref = key.ref
                    ref.sha256 = Data(progress.2)
                    return .with {
                        $0.shard = ref
                        $0.offset = UInt64(progress.0)
                        $0.totalBytes = UInt64(progress.1)
                    }
                }
            }
        })
    }

    private func receive(_ frames: [[UInt8]], link: Int) {
        guard let message = decode(frames) else { return }
        switch message.body {
        case .keyReply?, .drop?, .cancel?, .keyExpiry?: handleNow(message, link: link)
        case .query(let query)?: startQuery(query, id: message.requestID, link: link)
        default: Task { await handle(message, link: link) }
        }
    }

    /// Handles one message from the coordinator of `link` and returns when it has been dealt with (the socket
    /// loop runs the slow ones in a task each). Malformed messages are logged and dropped. Public so the fuzz
    /// harnesses can feed frames without a socket.
    public func deliver(_ frames: [[UInt8]], link: Int = 0) async {
        guard let message = decode(frames) else { return }
        await handle(message, link: link)
    }

    private func decode(_ frames: [[UInt8]]) -> ClusterMessage? {
        guard let payload = frames.last, let message = try? ClusterCodec.decode(payload) else {
            logger.warning("dropped a malformed message from the coordinator")
            return nil
        }
        return options.faults?.drops(message) == true ? nil : message
    }

    private func handle(_ message: ClusterMessage, link: Int) async {
        switch message.body {
        case .query(let query)?: await answer(query, id: message.requestID, link: link)
        case .keyPush(let push)?: await cachePushedKey(push)
        case .assign(let assign)?: await self.assign(assign, link: link)
        case .chunk(let chunk)?: await self.chunk(chunk)
        case .patch(let patch)?: await self.patch(patch)
        default: handleNow(message, link: link)
        }
    }

    /// The messages handled in arrival order on the socket's thread: key answers, drops and cancels.
    private func handleNow(_ message: ClusterMessage, link: Int) {
        switch message.body {
        case .keyReply(let reply)?:
            keys.resolve(message.requestID, found: reply.found, timestamp: reply.timestamp, key: [UInt8](reply.key), uploadedAt: reply.uploadedAt)
        case .keyExpiry(let expiry)?: expireKeys(expiry)
        case .drop(let drop)?: self.drop(drop.shard)
        case .cancel?: cancelQuery(QueryID(link: link, id: message.requestID))
        default: break
        }
    }
}

/// A query as a worker knows it: the link it came on and the request id its coordinator gave it.
struct QueryID: Hashable, Sendable {
    let link: Int
    let id: UInt64
}
