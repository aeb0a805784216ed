import ClusterTransport
import Foundation
import LookupEngine
import LookupProtocol
import LookupWorker
import PIR
import Synchronization

extension ClusterCoordinator {
    /// Makes a loaded version part of the desired state: each shard's file and its SHA-256. A version
    /// with a config id already installed but new content (a data update with a fixed shard configuration) only
    /// changes the desired hashes: workers fetch the new content while the old keeps answering.
    public func install(_ useCase: LoadedUseCase) async throws {
        let version = useCase.version
        let context = version.context
        let chunkBytes = options.transferChunkBytes
        let spool = options.spoolDirectory
        let configID = version.configuration.configID
        let shardCount = useCase.shards.count
        let logger = self.logger
        // Workers get each shard as its version-2 `.cvshard` file: read as it is, or (for a shard held only in
        // evaluation form) packed back into one, a shard at a time. Only the files are kept: spooled to disk when
        // the coordinator has a spool directory, so no shard stays in this process's memory.
        // Hashes this install spools are kept by a prune running meanwhile, until they are recorded below.
        let spooling = Mutex<[[UInt8]]>([])
        defer {
            let shas = spooling.withLock { $0 }
            state.withLock { s in
                for sha in shas {
                    s.spooling[sha, default: 1] -= 1
                    if s.spooling[sha] == 0 { s.spooling.removeValue(forKey: sha) }
                }
            }
        }
        // The content each shard had before: an update that rewrote only some plaintexts is sent to workers that
        // hold it as a patch (the changed ranges), not whole.
        let previous = state.withLock { s in s.sources.filter { $0.key.useCase == version.name && $0.key.configID == configID } }
        let built = try await ComputePool.detached {
            try MulPirServer.transientBuild { try zip(useCase.shards, version.configuration.shards).map { source, parameters in
                let index = source.index
                let message = ProtoPirParameters(parameters, sharding: version.configuration.sharding,
                                                 keyConfig: version.configuration.keyConfig)
                let (file, recorded) = try source.shardFile(parameterBlob: try message.serializedBytes(), context: context)
                if (index + 1) % 16 == 0 || index + 1 == shardCount {
                    logger.info("shards read", metadata: ["usecase": .string(version.name), "done": "\(index + 1)/\(shardCount)"])
                }
                let source: TransferSource
                // The manifest's hash, which the file was checked against as it was read, names the content.
                let sha = recorded ?? TransferSource.digest(file)
                if let spool {
                    spooling.withLock { $0.append(sha) }
                    self.state.withLock { $0.spooling[sha, default: 0] += 1 }
                    source = try TransferSource.spooled(file, sha256: sha, in: spool, chunkSize: chunkBytes)
                } else {
                    source = TransferSource(bytes: file, sha256: sha, chunkSize: chunkBytes)
                }
                let key = ShardKey(useCase: version.name, configID: configID, shard: index)
                let spec = ShardSpec(key: key, sha256: source.sha256, totalBytes: source.totalBytes,
                                     parameters: try message.serializedBytes(), keyConfigHash: version.configuration.keyConfigHash,
                                     shardCount: shardCount)
                var patch: ShardPatch?
                if let base = previous[key], base.sha256 != source.sha256 {
                    patch = try? ShardPatch.between(base: base, target: source, limit: source.totalBytes / 2)
                }
                return (spec, source, patch)
            } }
        }
        let changed = state.withLock { s -> Int in
            var changed = 0
            for (spec, source, patch) in built where s.desired.shards[spec.key] != spec {
                s.desired.shards[spec.key] = spec
                if let base = s.sources[spec.key], let patch, patch.baseSHA256 == base.sha256 {
                    s.patches[spec.key] = patch
                } else {
                    s.patches.removeValue(forKey: spec.key)
                }
                s.sources[spec.key] = source
                changed += 1
            }
            if changed > 0 {
                s.desired.generation += 1
                s.planDirty = true
            }
            return changed
        }
        if changed > 0 {
            logger.info("desired shards changed", metadata: ["usecase": .string(version.name), "changed": "\(changed)/\(shardCount)"])
            persistDesired()
            reconcileAll()
        }
        pruneSpool()
    }

    public func retire(useCase: String, configID: [UInt8]) async {
        let removed = state.withLock { s -> Bool in
            let keys = s.desired.shards.keys.filter { $0.useCase == useCase && $0.configID == configID }
            for key in keys {
                s.desired.shards.removeValue(forKey: key)
                s.desired.placement.removeValue(forKey: key)
                s.sources.removeValue(forKey: key)
                s.patches.removeValue(forKey: key)
            }
            if !keys.isEmpty { s.desired.generation += 1 }
            return !keys.isEmpty
        }
        if removed {
            persistDesired()
            reconcileAll()
            pruneSpool()
        }
    }

    /// Removes spooled shard files no desired shard names (replaced content, retired versions, interrupted writes).
    func pruneSpool() {
        guard let directory = options.spoolDirectory else { return }
        let keeping = state.withLock { Set($0.sources.values.map(\.sha256)).union($0.spooling.keys) }
        let removed = TransferSource.pruneSpool(directory, keeping: keeping)
        if removed > 0 { logger.info("spooled shard files removed", metadata: ["count": "\(removed)"]) }
    }

    /// Writes the desired state through to the store (the leader only: a follower's state is the store's).
    func persistDesired() {
        guard let snapshot = state.withLock({ $0.leading ? $0.desired : nil }) else { return }
        let store = options.desiredStore
        let logger = self.logger
        Task {
            do { try await store.save(snapshot) } catch {
                logger.error("desired state not stored", metadata: ["error": .string("\(error)")])
            }
        }
    }

    /// Recomputes the placement if membership or shards changed, then reconciles every worker (the leader only).
    func reconcileAll() {
        let replanned = state.withLock { s -> Bool in
            guard s.leading, s.planDirty else { return false }
            s.planDirty = false
            let live = Set(s.workers.keys)
            var current: [ShardKey: Set<String>] = [:]
            for (key, holders) in s.desired.placement { current[key] = holders.intersection(live) }
            for (name, record) in s.workers {
                for (key, sha) in record.actual where s.desired.shards[key]?.sha256 == sha { current[key, default: []].insert(name) }
            }
            let plan = ShardPlacement.plan(shards: Array(s.desired.shards.keys), workers: Array(live), current: current,
                                      replication: options.replication)
            if plan != s.desired.placement {
                s.desired.placement = plan
                s.desired.generation += 1
                return true
            }
            return false
        }
        if replanned { persistDesired() }
        for name in state.withLock({ Array($0.workers.keys) }) { reconcile(name) }
    }

    /// Compares one worker's reported state with what it must hold and sends what is missing, each message
    /// again after a back-off while the worker's state does not show it took effect. Only the leader sends.
    func reconcile(_ name: String) {
        let messages = state.withLock { s -> [ClusterMessage] in
            guard s.leading, var record = s.workers[name] else { return [] }
            let now = ContinuousClock.now
            var out: [ClusterMessage] = []
            var assigns: [WorkerRecord.Content: WorkerRecord.Sent] = [:]
            var drops: [WorkerRecord.Content: WorkerRecord.Sent] = [:]
            func due(_ previous: WorkerRecord.Sent?, progress: UInt64) -> WorkerRecord.Sent? {
                guard let previous else { return .init(at: now, attempts: 0, progress: progress) }
                if progress > previous.progress { return nil }  // a transfer is moving: nothing to re-send
                let delay = min(options.resendBase * (1 << min(previous.attempts, 16)), options.resendMax)
                return now - previous.at >= delay ? .init(at: now, attempts: previous.attempts + 1, progress: progress) : nil
            }
            // What it must hold and does not (yet) report.
            for (key, holders) in s.desired.placement where holders.contains(name) {
                guard let spec = s.desired.shards[key], record.actual[key] != spec.sha256 else { continue }
                let content = WorkerRecord.Content(key: key, sha256: spec.sha256)
                let progress = record.transfers[key].flatMap { $0.sha256 == spec.sha256 ? $0.offset : nil } ?? 0
                let previous = record.assignsSent[content]
                if let next = due(previous, progress: progress) {
                    assigns[content] = next
                    out.append(Self.assignMessage(spec))
                } else if var kept = previous {
                    if progress > kept.progress { kept = .init(at: now, attempts: 0, progress: progress) }
                    assigns[content] = kept
                }
            }
            // What it holds or fetches and must not: retired shards at once, surplus copies once enough copies with
            // the desired content are loaded elsewhere (until then the old copy keeps answering).
            var unwanted: [(ShardKey, [UInt8])] = []
            for (key, sha) in record.actual {
                let spec = s.desired.shards[key]
                let placed = s.desired.placement[key]?.contains(name) == true
                if spec != nil && placed { continue }  // wanted here (a stale hash is replaced in place by the assign)
                if let spec {
                    let holders = s.desired.placement[key] ?? []
                    let good = holders.filter { s.workers[$0]?.actual[key] == spec.sha256 }.count
                    if good < holders.count || holders.isEmpty { continue }
                }
                unwanted.append((key, sha))
            }
            for (key, transfer) in record.transfers {
                let spec = s.desired.shards[key]
                if spec?.sha256 == transfer.sha256 && s.desired.placement[key]?.contains(name) == true { continue }
                if record.actual[key] == transfer.sha256 { continue }
                unwanted.append((key, transfer.sha256))
            }
            for (key, sha) in unwanted {
                let content = WorkerRecord.Content(key: key, sha256: sha)
                let previous = record.dropsSent[content]
                if let next = due(previous, progress: 0) {
                    drops[content] = next
                    var ref = key.ref
                    ref.sha256 = Data(sha)
                    out.append(.with { $0.drop = .with { $0.shard = ref } })
                } else if let previous {
                    drops[content] = previous
                }
            }
            record.assignsSent = assigns
            record.dropsSent = drops
            s.workers[name] = record
            return out
        }
        for message in messages {
            if case .assign(let assign)? = message.body {
                count("callveil_cluster_assigns_sent_total")
                logger.debug("assigning shard", metadata: ["shard": "\(ShardKey(assign.shard))", "worker": .string(name)])
            } else {
                count("callveil_cluster_drops_sent_total")
            }
            send(to: name, message)
        }
    }

    static func assignMessage(_ spec: ShardSpec) -> ClusterMessage {
        var ref = spec.key.ref
        ref.sha256 = Data(spec.sha256)
        return .with {
            $0.assign = .with {
                $0.shard = ref
                $0.parameters = Data(spec.parameters)
                $0.sha256 = Data(spec.sha256)
                $0.totalBytes = UInt64(spec.totalBytes)
                $0.keyConfigHash = Data(spec.keyConfigHash)
                $0.shardCount = UInt32(spec.shardCount)
            }
        }
    }

    /// A worker's report on a shard: a failure is logged and counted (the assign is re-sent after its back-off);
    /// success shows in its heartbeats, which it sends at once.
    func shardReport(from name: String, _ report: Callveil_Cluster_V1_ShardLoaded) {
        guard let (key, _) = ClusterLimits.validate(report.shard, needsHash: false) else { return reject("shard reference", worker: name) }
        if report.ok {
            logger.info("shard loaded on worker", metadata: ["shard": "\(key)", "worker": .string(name)])
        } else {
            count("callveil_cluster_transfer_failures_total")
            logger.warning("shard failed on worker; it will be sent again",
                           metadata: ["shard": "\(key)", "worker": .string(name),
                                      "error": .string(String(report.error.prefix(ClusterLimits.maxReasonCharacters)))])
        }
    }
}
