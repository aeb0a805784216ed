import BFV
import Cluster
import Foundation
import Logging
import LookupProtocol
import PIR
import Synchronization
import ZeroMQ

/// The coordinator's shard executor (`callveil coordinator`): a ROUTER socket (CURVE server with a ZAP
/// allow-list across hosts) to which workers connect. It places every shard on `replication` workers, ships
/// shards to them (compact form, LZ4 chunks, resumable), routes each query to the live replica with the fewest
/// queries in flight among those that reported the shard loaded (within each worker's credit window), retries on
/// another replica after a timeout or a lost worker, answers workers' key fetches from the key store and pushes new keys to them.
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
        /// The coordinator's CURVE key pair and the workers' public keys it admits (required across hosts).
        public var curve: (keys: CurveKeyPair, allowedWorkers: [String])?

        /// Settings binding `bind`.
        public init(bind: String) { self.bind = bind }
    }

    struct Worker {
        var lastSeen: ContinuousClock.Instant
        var inFlight = 0
        var credit: Int
        var loaded = Set<ShardKey>()
        var assigned = Set<ShardKey>()
    }

    struct Version {
        let name: String
        let configID: [UInt8]
        let keyConfigHash: [UInt8]
        var shards: [ShardSource]
    }

    struct ShardSource: Sendable {
        let parameters: [UInt8]
        let transfer: TransferSource
    }

    struct Pending {
        let continuation: CheckedContinuation<ProtoPIRResponse, any Error>
        let worker: String
    }

    struct State {
        var workers: [String: Worker] = [:]
        var versions: [[UInt8]: Version] = [:]  // by config id
        var pending: [UInt64: Pending] = [:]
        var nextID: UInt64 = 1
    }

    private let state = Mutex(State())
    private let options: Options
    private let keyStore: any EvaluationKeyStore
    private let logger: Logger
    private let loop = Mutex<SocketLoop?>(nil)
    private let zap: ZAPAuthenticator?
    private let monitor = Mutex<Task<Void, Never>?>(nil)
    /// The bound endpoint (a `tcp://…:0` bind resolved to its port).
    public let endpoint: String

    /// Starts the coordinator socket in `context`.
    public init(context: ZMQContext, options: Options, keyStore: any EvaluationKeyStore, logger: Logger) throws {
        self.options = options
        self.keyStore = keyStore
        self.logger = logger
        zap = try options.curve.map { try ZAPAuthenticator(context: context, allowedPublicKeys: $0.allowedWorkers) }
        let box = WeakBox()
        let socketLoop = try SocketLoop(context: context, kind: .router, name: "callveil-coordinator", setup: { socket in
            try socket.set(33, 1)  // ZMQ_ROUTER_MANDATORY: unroutable sends fail instead of vanishing
            try socket.set(56, 1)  // ZMQ_ROUTER_HANDOVER: a restarted worker takes its identity back
            if let curve = options.curve { try curve.keys.configureServer(socket, zapDomain: "callveil") }
            try socket.bind(options.bind)
            return socket.lastEndpoint
        }, onMessage: { frames in box.value?.receive(frames) })
        endpoint = socketLoop.endpoint
        loop.withLock { $0 = socketLoop }
        box.value = self
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                self?.checkWorkers()
            }
        }
        monitor.withLock { $0 = task }
    }

    /// Waits until every shard of every installed version is loaded on `copies` workers (or the timeout passes);
    /// returns whether it happened.
    public func waitUntilPlaced(copies: Int, timeout: Duration = .seconds(60)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let placed = state.withLock { s -> Bool in
                for version in s.versions.values {
                    for i in 0..<version.shards.count {
                        let key = ShardKey(useCase: version.name, configID: version.configID, shard: i)
                        if s.workers.values.filter({ $0.loaded.contains(key) }).count < copies { return false }
                    }
                }
                return true
            }
            if placed { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits until `workerCount` workers are connected, every shard has a loaded copy, loads differ by at most one
    /// shard, and surplus copies have had time to be dropped; returns whether that happened before the timeout.
    public func waitUntilBalanced(workerCount: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let loads = workers.values.map(\.count)
            if loads.count == workerCount, (loads.max() ?? 0) - (loads.min() ?? 0) <= 1,
               await waitUntilPlaced(copies: 1, timeout: .milliseconds(1)) {
                try? await Task.sleep(for: .milliseconds(500))
                return true
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Stops routing and closes the socket; queries in flight fail.
    public func stop() {
        monitor.withLock { $0?.cancel() }
        let pending = state.withLock { s in
            defer { s.pending.removeAll() }
            return Array(s.pending.values)
        }
        for p in pending { p.continuation.resume(throwing: LookupError(.serviceUnavailable, "coordinator stopping")) }
        loop.withLock { $0?.stop() }
    }

    /// Live workers and the shards each reported loaded.
    public var workers: [String: Set<ShardKey>] {
        state.withLock { $0.workers.mapValues(\.loaded) }
    }

    /// `{"workers":{"<id>":<shards loaded>,…}}` for `/healthz`.
    public var healthJSON: String? {
        let entries = workers.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value.count)" }
        return "{\"workers\":{\(entries.joined(separator: ","))}}"
    }

    /// Connections the CURVE allow-list refused.
    public var refusedConnections: Int { zap?.refusedCount ?? 0 }

    // MARK: ShardExecutor

    public func install(_ useCase: LoadedUseCase) async throws {
        let version = useCase.version
        let context = version.context
        let chunkBytes = options.transferChunkBytes
        let sources = try await Task.detached {
            try zip(useCase.databases, version.configuration.shards).map { database, parameters in
                let message = ProtoPirParameters(parameters, sharding: version.configuration.sharding,
                                                 keyConfig: version.configuration.keyConfig)
                return ShardSource(parameters: try message.serializedBytes(),
                                   transfer: TransferSource(bytes: try CompactShard.serialize(database, context: context),
                                                            chunkSize: chunkBytes))
            }
        }.value
        state.withLock {
            $0.versions[version.configuration.configID] = Version(name: version.name, configID: version.configuration.configID,
                                                                  keyConfigHash: version.configuration.keyConfigHash, shards: sources)
        }
        rebalance()
    }

    public func retire(useCase: String, configID: [UInt8]) async {
        let drops: [(String, ShardKey)] = state.withLock { s in
            guard s.versions.removeValue(forKey: configID) != nil else { return [] }
            var drops: [(String, ShardKey)] = []
            for (id, var worker) in s.workers {
                let gone = worker.assigned.union(worker.loaded).filter { $0.configID == configID }
                worker.assigned.subtract(gone)
                worker.loaded.subtract(gone)
                s.workers[id] = worker
                drops += gone.map { (id, $0) }
            }
            return drops
        }
        for (worker, key) in drops { send(to: worker, .with { $0.drop = .with { $0.shard = key.ref } }) }
    }

    public func keyUploaded(_ key: StoredEvaluationKey) async {
        let workers = state.withLock { Array($0.workers.keys) }
        let push = ClusterMessage.with {
            $0.keyPush = .with {
                $0.user = key.user
                $0.identifier = Data(key.identifier)
                $0.timestamp = key.timestamp
                $0.key = Data(key.serialized)
            }
        }
        for worker in workers { send(to: worker, push) }
    }

    public func execute(_ query: ShardQuery) async throws -> ProtoPIRResponse {
        let shard = ShardKey(useCase: query.useCase, configID: query.configID, shard: query.shardIndex)
        var request = Callveil_Cluster_V1_QueryRequest()
        request.shard = shard.ref
        request.query = query.query
        switch query.key {
        case .stored(let user, let identifier, let timestamp):
            request.user = user
            request.keyIdentifier = Data(identifier)
            request.keyTimestamp = timestamp
        case .inline(let key):
            request.inlineKey = key
        }
        var tried = Set<String>()
        var lastError: any Error = LookupError(.serviceUnavailable, "No replica of shard \(shard.shard) is available; retry later")
        let deadline = ContinuousClock.now + options.requestTimeout
        for _ in 0..<options.maxAttempts {
            var choice = reserve(shard, excluding: tried)
            // Every replica at its credit: wait for a slot (back-pressure) rather than overload a worker.
            while case .busy = choice, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(2))
                choice = reserve(shard, excluding: tried)
            }
            guard case .reserved(let worker, let id) = choice else { break }
            tried.insert(worker)
            do {
                return try await call(worker: worker, id: id, request: request)
            } catch let error as LookupError where error.status == .serviceUnavailable || error.status == .gatewayTimeout {
                lastError = error
                logger.warning("retrying a query on another replica", metadata: ["shard": "\(shard)", "worker": .string(worker)])
            }
        }
        throw lastError
    }

    // MARK: Routing

    enum Reservation {
        case reserved(String, UInt64)
        case busy
        case none
    }

    /// Picks the live replica with the fewest queries in flight that has credit left, and registers a request id.
    private func reserve(_ shard: ShardKey, excluding: Set<String>) -> Reservation {
        state.withLock { s in
            let holders = s.workers.filter { $0.value.loaded.contains(shard) && !excluding.contains($0.key) }
            let candidates = holders.filter { $0.value.inFlight < $0.value.credit }
            guard let best = candidates.min(by: { ($0.value.inFlight, $0.key) < ($1.value.inFlight, $1.key) }) else {
                return holders.isEmpty ? .none : .busy
            }
            s.workers[best.key]?.inFlight += 1
            let id = s.nextID
            s.nextID += 1
            return .reserved(best.key, id)
        }
    }

    private func call(worker: String, id: UInt64, request: Callveil_Cluster_V1_QueryRequest) async throws -> ProtoPIRResponse {
        let timeout = options.requestTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.fail(id, LookupError(.gatewayTimeout, "worker \(worker) did not answer in time"))
        }
        defer {
            timer.cancel()
            state.withLock { $0.workers[worker]?.inFlight -= 1 }
        }
        return try await withCheckedThrowingContinuation { continuation in
            state.withLock { $0.pending[id] = Pending(continuation: continuation, worker: worker) }
            send(to: worker, .with {
                $0.requestID = id
                $0.query = request
            })
        }
    }

    private func fail(_ id: UInt64, _ error: any Error) {
        state.withLock { $0.pending.removeValue(forKey: id) }?.continuation.resume(throwing: error)
    }

    private func send(to worker: String, _ message: ClusterMessage) {
        loop.withLock { $0 }?.send([Array(worker.utf8), ClusterCodec.encode(message)])
    }

    // MARK: Messages from workers

    private func receive(_ frames: [[UInt8]]) {
        guard frames.count == 2, let message = try? ClusterCodec.decode(frames[1]) else {
            logger.warning("dropped a malformed message from a worker")
            return
        }
        let worker = String(decoding: frames[0], as: UTF8.self)
        switch message.body {
        case .hello(let greeting)?: hello(from: worker, greeting)
        case .reply(let reply)?:
            guard let pending = state.withLock({ $0.pending.removeValue(forKey: message.requestID) }) else { return }
            if reply.errorStatus != 0 {
                pending.continuation.resume(throwing: LookupError(.init(code: Int(reply.errorStatus)), reply.errorMessage))
            } else {
                pending.continuation.resume(returning: reply.response)
            }
        case .keyRequest(let request)?:
            Task {
                let stored = try? await keyStore.key(user: request.user, identifier: [UInt8](request.identifier))
                send(to: worker, .with {
                    $0.requestID = message.requestID
                    $0.keyReply = .with {
                        $0.found = stored != nil
                        $0.timestamp = stored?.timestamp ?? 0
                        $0.key = Data(stored?.serialized ?? [])
                    }
                })
            }
        case .transferRequest(let request)?: sendChunk(to: worker, ShardKey(request.shard), offset: Int(request.offset))
        case .loaded(let loaded)?:
            let key = ShardKey(loaded.shard)
            state.withLock { s in
                if loaded.ok { s.workers[worker]?.loaded.insert(key) } else { s.workers[worker]?.assigned.remove(key) }
            }
            logger.info(loaded.ok ? "shard loaded on worker" : "shard failed on worker",
                        metadata: ["shard": "\(key)", "worker": .string(worker)])
            rebalance()
        case .goodbye?: removeWorker(worker, reason: "drained")
        default: break
        }
    }

    private func hello(from worker: String, _ hello: Callveil_Cluster_V1_Hello) {
        let isNew: Bool = state.withLock { s in
            let known = Set(s.versions.values.flatMap { v in (0..<v.shards.count).map { ShardKey(useCase: v.name, configID: v.configID, shard: $0) } })
            let loaded = Set(hello.loaded.map(ShardKey.init)).intersection(known)
            if var existing = s.workers[worker] {
                existing.lastSeen = .now
                existing.credit = Int(max(hello.credit, 1))
                existing.loaded = loaded
                existing.assigned.formUnion(loaded)
                s.workers[worker] = existing
                return false
            }
            s.workers[worker] = Worker(lastSeen: .now, credit: Int(max(hello.credit, 1)), loaded: loaded, assigned: loaded)
            return true
        }
        if isNew {
            logger.info("worker joined", metadata: ["worker": .string(worker), "threads": "\(hello.threads)"])
            rebalance()
        }
    }

    private func checkWorkers() {
        let limit = options.heartbeatTimeout
        let dead = state.withLock { s in s.workers.filter { ContinuousClock.now - $0.value.lastSeen > limit }.map(\.key) }
        for worker in dead { removeWorker(worker, reason: "no heartbeat for \(limit)") }
    }

    private func removeWorker(_ worker: String, reason: String) {
        let orphans: [Pending] = state.withLock { s in
            guard s.workers.removeValue(forKey: worker) != nil else { return [] }
            let ids = s.pending.filter { $0.value.worker == worker }.map(\.key)
            return ids.compactMap { s.pending.removeValue(forKey: $0) }
        }
        logger.warning("worker lost", metadata: ["worker": .string(worker), "reason": .string(reason)])
        for p in orphans { p.continuation.resume(throwing: LookupError(.serviceUnavailable, "worker \(worker) was lost")) }
        rebalance()
    }

    // MARK: Placement and transfer

    /// Assigns missing copies and, once enough copies are loaded elsewhere, drops surplus ones.
    private func rebalance() {
        let (assigns, drops) = state.withLock { s -> ([(String, ShardKey, ShardSource, Version)], [(String, ShardKey)]) in
            var all: [ShardKey: (ShardSource, Version)] = [:]
            for version in s.versions.values {
                for (i, source) in version.shards.enumerated() { all[ShardKey(useCase: version.name, configID: version.configID, shard: i)] = (source, version) }
            }
            var current: [ShardKey: Set<String>] = [:]
            for (id, worker) in s.workers { for key in worker.assigned.union(worker.loaded) { current[key, default: []].insert(id) } }
            let plan = Placement.plan(shards: Array(all.keys), workers: Array(s.workers.keys), current: current, replication: options.replication)
            var assigns: [(String, ShardKey, ShardSource, Version)] = []
            var drops: [(String, ShardKey)] = []
            for (key, holders) in plan {
                for worker in holders where s.workers[worker]?.assigned.contains(key) == false {
                    s.workers[worker]?.assigned.insert(key)
                    assigns.append((worker, key, all[key]!.0, all[key]!.1))
                }
                let loadedElsewhere = holders.filter { s.workers[$0]?.loaded.contains(key) == true }.count
                for (id, worker) in s.workers where worker.assigned.contains(key) && !holders.contains(id)
                    && loadedElsewhere >= min(options.replication, s.workers.count) {
                    s.workers[id]?.assigned.remove(key)
                    s.workers[id]?.loaded.remove(key)
                    drops.append((id, key))
                }
            }
            return (assigns, drops)
        }
        for (worker, key, source, version) in assigns {
            logger.info("assigning shard", metadata: ["shard": "\(key)", "worker": .string(worker)])
            send(to: worker, .with {
                $0.assign = .with {
                    $0.shard = key.ref
                    $0.parameters = Data(source.parameters)
                    $0.sha256 = Data(source.transfer.sha256)
                    $0.totalBytes = UInt64(source.transfer.bytes.count)
                    $0.keyConfigHash = Data(version.keyConfigHash)
                    $0.shardCount = UInt32(version.shards.count)
                }
            })
        }
        for (worker, key) in drops { send(to: worker, .with { $0.drop = .with { $0.shard = key.ref } }) }
    }

    private func sendChunk(to worker: String, _ key: ShardKey, offset: Int) {
        guard let source = state.withLock({ $0.versions[key.configID]?.shards[safe: key.shard] }) else { return }
        do {
            let chunk = try source.transfer.chunk(for: key.ref, at: offset)
            send(to: worker, .with { $0.chunk = chunk })
        } catch {
            logger.warning("bad transfer request", metadata: ["shard": "\(key)", "worker": .string(worker), "error": "\(error)"])
        }
    }
}

/// A weak reference the socket loop's callback holds (the loop is created before `self` exists).
final class WeakBox: @unchecked Sendable {
    weak var value: ClusterCoordinator?
}

extension Array {
    subscript(safe index: Int) -> Element? { index >= 0 && index < count ? self[index] : nil }
}
