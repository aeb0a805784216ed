import BFV
import Cluster
import Foundation
import Logging
import LookupProtocol
import PIR
import Synchronization
import ZeroMQ

/// A cluster worker (`callveil worker`): connects a DEALER socket to the coordinator (CURVE-authenticated
/// across hosts), announces itself and the shards it holds every second, loads the shards it is assigned (from
/// its data directory, or by a resumable LZ4 transfer of the compact form), answers shard queries with the
/// in-process PIR core, and fetches evaluation keys from the coordinator on a cache miss.
public final class ClusterWorker: Sendable {
    /// Worker settings.
    public struct Options: Sendable {
        /// The coordinator's endpoint (`tcp://host:port` or `inproc://name`).
        public var coordinator: String
        /// Where transferred shards are kept.
        public var dataDirectory: String
        /// Routing id, unique in the cluster.
        public var workerID: String
        /// PIR threads per query (default: every core).
        public var threads: Int?
        /// Queries accepted at once.
        public var credit = 8
        /// This worker's CURVE key pair and the coordinator's public key (required across hosts).
        public var curve: (keys: CurveKeyPair, serverPublicKey: String)?
        /// Memory for parsed keys, bytes.
        public var keyCacheBytes = 512 << 20
        /// Where PIR compute times are recorded (an embedded worker shares the service's metrics).
        public var metrics: ServiceMetrics?

        /// Settings for a worker.
        public init(coordinator: String, dataDirectory: String, workerID: String) {
            self.coordinator = coordinator
            self.dataDirectory = dataDirectory
            self.workerID = workerID
        }
    }

    private struct State {
        var loaded = Set<ShardKey>()
        var transfers: [ShardKey: Transfer] = [:]
        var contexts: [[UInt8]: Context] = [:]  // key-config hash -> context
        var resumed: [ShardKey: Int] = [:]
        var stopped = false
    }

    /// Only touched while holding the state lock.
    private final class Transfer: @unchecked Sendable {
        let assign: Callveil_Cluster_V1_AssignShard
        let sink: TransferSink
        var failures = 0
        init(assign: Callveil_Cluster_V1_AssignShard, sink: TransferSink) {
            self.assign = assign
            self.sink = sink
        }
    }

    private let state = Mutex(State())
    private let options: Options
    private let executor: LocalShardExecutor
    private let keys: RemoteKeyStore
    private let logger: Logger
    private let loop = Mutex<SocketLoop?>(nil)
    private let heartbeat = Mutex<Task<Void, Never>?>(nil)

    /// Starts a worker in `context` and connects it.
    public init(context: ZMQContext, options: Options, logger: Logger) throws {
        self.options = options
        self.logger = logger
        let keys = RemoteKeyStore { _, _, _ in }
        self.keys = keys
        self.executor = LocalShardExecutor(keyStore: keys, cache: EvaluationKeyCache(capacity: options.keyCacheBytes),
                                           threads: options.threads, concurrentQueries: 2, metrics: options.metrics)
        try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let socketLoop = try SocketLoop(context: context, kind: .dealer, name: "callveil-worker-\(options.workerID)", setup: { socket in
            try socket.set(5, string: options.workerID)  // ZMQ_ROUTING_ID
            if let curve = options.curve { try curve.keys.configureClient(socket, serverPublicKey: curve.serverPublicKey) }
            try socket.connect(options.coordinator)
            return options.coordinator
        }, onMessage: { [weak self] frames in self?.receive(frames) })
        loop.withLock { $0 = socketLoop }
        keys.sender = { [weak self] id, user, identifier in
            self?.send(.with {
                $0.requestID = id
                $0.keyRequest = .with {
                    $0.user = user
                    $0.identifier = Data(identifier)
                }
            })
        }
        sendHello()
        let task = Task { [weak self] in
            while !Task.isCancelled {
                do { try await Task.sleep(for: .milliseconds(500)) } catch { return }
                self?.sendHello()
            }
        }
        heartbeat.withLock { $0 = task }
    }

    /// Says goodbye to the coordinator (it stops routing here) and closes the socket.
    public func stop() {
        guard state.withLock({ s in defer { s.stopped = true }; return !s.stopped }) else { return }
        heartbeat.withLock { $0?.cancel() }
        send(.with { $0.goodbye = .init() })
        Thread.sleep(forTimeInterval: 0.05)
        loop.withLock { $0?.stop() }
    }

    /// Stops without a goodbye, as a crashed or unplugged worker would (for failure tests and drills).
    public func kill() {
        guard state.withLock({ s in defer { s.stopped = true }; return !s.stopped }) else { return }
        heartbeat.withLock { $0?.cancel() }
        loop.withLock { $0?.stop() }
    }

    /// Transfers this worker resumed from a partial file, with the offset it resumed at.
    public var resumedTransfers: [ShardKey: Int] { state.withLock { $0.resumed } }

    /// Shards loaded and verified.
    public var loadedShards: Set<ShardKey> { state.withLock { $0.loaded } }

    private func send(_ message: ClusterMessage) {
        let bytes = ClusterCodec.encode(message)
        loop.withLock { $0 }?.send([bytes])
    }

    private func sendHello() {
        guard let loaded = state.withLock({ $0.stopped ? nil : $0.loaded }) else { return }
        send(.with {
            $0.hello = .with {
                $0.workerID = options.workerID
                $0.threads = UInt32(options.threads ?? MulPirServer.coreCount)
                $0.credit = UInt32(options.credit)
                $0.loaded = loaded.sorted().map(\.ref)
            }
        })
    }

    private func receive(_ frames: [[UInt8]]) {
        guard let payload = frames.last, let message = try? ClusterCodec.decode(payload) else {
            logger.warning("dropped a malformed message from the coordinator")
            return
        }
        switch message.body {
        case .query(let query)?: Task { await answer(query, id: message.requestID) }
        case .keyReply(let reply)?: keys.resolve(message.requestID, found: reply.found, timestamp: reply.timestamp, key: [UInt8](reply.key))
        case .keyPush(let push)?: Task { await cachePushedKey(push) }
        case .assign(let assign)?: Task { await self.assign(assign) }
        case .chunk(let chunk)?: Task { await self.chunk(chunk) }
        case .drop(let drop)?:
            let key = ShardKey(drop.shard)
            executor.dropShard(useCase: key.useCase, configID: key.configID, index: key.shard)
            _ = state.withLock { $0.loaded.remove(key) }
        default: break
        }
    }

    private func answer(_ request: Callveil_Cluster_V1_QueryRequest, id: UInt64) async {
        let key = ShardKey(request.shard)
        let source: EvaluationKeySource = request.hasInlineKey ? .inline(request.inlineKey)
            : .stored(user: request.user, identifier: [UInt8](request.keyIdentifier), timestamp: request.keyTimestamp)
        var reply = Callveil_Cluster_V1_QueryReply()
        do {
            reply.response = try await executor.execute(ShardQuery(useCase: key.useCase, configID: key.configID, shardIndex: key.shard,
                                                                    query: request.query, key: source))
        } catch {
            var mapped = LookupError.from(error) ?? LookupError(.internalServerError, "worker error")
            // A version this worker does not hold (its copies were just moved away) is the coordinator's to
            // retry elsewhere, not the device's to re-sync.
            if mapped.status == .gone { mapped = LookupError(.serviceUnavailable, "shard \(key) is not held by this worker") }
            reply.errorStatus = UInt32(mapped.status.code)
            reply.errorMessage = mapped.message
        }
        send(.with {
            $0.requestID = id
            $0.reply = reply
        })
    }

    private func cachePushedKey(_ push: Callveil_Cluster_V1_KeyPush) async {
        guard let context = state.withLock({ $0.contexts[[UInt8](push.identifier)] }) else { return }
        try? await executor.cacheKey(user: push.user, identifier: [UInt8](push.identifier), timestamp: push.timestamp,
                                     serialized: [UInt8](push.key), context: context)
    }

    private func path(_ key: ShardKey) -> String {
        let safe = key.useCase.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" }
        return "\(options.dataDirectory)/\(String(safe))/\(key.configID.hexString)/shard-\(key.shard).compact"
    }

    private func assign(_ assign: Callveil_Cluster_V1_AssignShard) async {
        let key = ShardKey(assign.shard)
        if state.withLock({ $0.loaded.contains(key) || $0.transfers[key] != nil }) { return }
        let path = self.path(key)
        // Already on disk from an earlier run: verify and load without a transfer.
        if let bytes = FileManager.default.contents(atPath: path), CompactShard.sha256([UInt8](bytes)) == [UInt8](assign.sha256) {
            await load(key, assign: assign, bytes: [UInt8](bytes))
            return
        }
        do {
            let sink = try TransferSink(path: path, totalBytes: Int(assign.totalBytes), sha256: [UInt8](assign.sha256))
            let offset = state.withLock { s -> Int in
                s.transfers[key] = Transfer(assign: assign, sink: sink)
                if sink.offset > 0 { s.resumed[key] = sink.offset }
                return sink.offset
            }
            if offset > 0 { logger.info("resuming shard transfer", metadata: ["shard": "\(key)", "offset": "\(offset)"]) }
            requestTransfer(key, offset: offset)
        } catch {
            report(key, ok: false, error: "\(error)")
        }
    }

    private func requestTransfer(_ key: ShardKey, offset: Int) {
        send(.with {
            $0.transferRequest = .with {
                $0.shard = key.ref
                $0.offset = UInt64(offset)
            }
        })
    }

    private func chunk(_ chunk: Callveil_Cluster_V1_ShardChunk) async {
        let key = ShardKey(chunk.shard)
        enum Step { case next(Int), done(Callveil_Cluster_V1_AssignShard, [UInt8]), retry(Int), fail(String), ignore }
        let step: Step = state.withLock { s in
            guard let transfer = s.transfers[key] else { return .ignore }
            do {
                if try transfer.sink.accept(chunk) {
                    s.transfers.removeValue(forKey: key)
                    return .done(transfer.assign, try transfer.sink.finish())
                }
                transfer.failures = 0
                return .next(transfer.sink.offset)
            } catch {
                transfer.failures += 1
                if transfer.failures >= 5 {
                    s.transfers.removeValue(forKey: key)
                    return .fail("\(error)")
                }
                return .retry(transfer.sink.offset)
            }
        }
        switch step {
        case .next(let offset):
            if offset * 10 / max(Int(chunk.totalBytes), 1) != Int(chunk.offset) * 10 / max(Int(chunk.totalBytes), 1) {
                logger.info("shard transfer", metadata: ["shard": "\(key)", "received": "\(offset)/\(chunk.totalBytes)"])
            }
            requestTransfer(key, offset: offset)
        case .retry(let offset):
            logger.warning("rejected a shard chunk; asking again", metadata: ["shard": "\(key)", "offset": "\(offset)"])
            requestTransfer(key, offset: offset)
        case .done(let assign, let bytes): await load(key, assign: assign, bytes: bytes)
        case .fail(let why): report(key, ok: false, error: why)
        case .ignore: break
        }
    }

    private func load(_ key: ShardKey, assign: Callveil_Cluster_V1_AssignShard, bytes: [UInt8]) async {
        do {
            let parameters = try ProtoPirParameters(serializedBytes: [UInt8](assign.parameters))
            let native = try parameters.native()
            let context = try Context(parameters: native.encryption)
            let database = try await Task.detached { try CompactShard.deserialize(bytes, parameters: native, context: context) }.value
            try await executor.installShard(useCase: key.useCase, configID: key.configID, index: key.shard,
                                            shardCount: Int(assign.shardCount), database: database, context: context)
            state.withLock {
                $0.loaded.insert(key)
                $0.contexts[[UInt8](assign.keyConfigHash)] = context
            }
            report(key, ok: true, error: "")
            sendHello()
        } catch {
            report(key, ok: false, error: "\(error)")
        }
    }

    private func report(_ key: ShardKey, ok: Bool, error: String) {
        if !ok { logger.error("shard failed to load", metadata: ["shard": "\(key)", "error": .string(error)]) }
        send(.with {
            $0.loaded = .with {
                $0.shard = key.ref
                $0.ok = ok
                $0.error = error
            }
        })
    }
}
