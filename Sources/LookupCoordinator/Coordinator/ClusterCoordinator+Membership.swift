import ClusterTransport
import LookupProtocol
import LookupEngine
import LookupWorker

extension ClusterCoordinator {
    /// A heartbeat: validates it, records the worker's actual state (a new incarnation means it restarted: its
    /// queries in flight are failed over at once), and reconciles it against the desired state.
    func hello(from name: String, route: [UInt8], connection: Int32?, _ hello: Callveil_Cluster_V1_Hello) {
        guard hello.loaded.count <= ClusterLimits.maxReportedShards, hello.transfers.count <= ClusterLimits.maxReportedShards else {
            return reject("too many shards reported", worker: name)
        }
        var actual: [ShardKey: [UInt8]] = [:]
        for ref in hello.loaded {
            guard let (key, sha) = ClusterLimits.validate(ref, needsHash: true) else { return reject("shard reference", worker: name) }
            actual[key] = sha
        }
        var transfers: [ShardKey: (sha256: [UInt8], offset: UInt64)] = [:]
        for transfer in hello.transfers {
            guard let (key, sha) = ClusterLimits.validate(transfer.shard, needsHash: true),
                  transfer.totalBytes <= ClusterLimits.maxShardBytes, transfer.offset <= transfer.totalBytes else {
                return reject("transfer progress", worker: name)
            }
            transfers[key] = (sha, transfer.offset)
        }
        let credit = min(max(Int(hello.credit), ClusterLimits.creditRange.lowerBound), ClusterLimits.creditRange.upperBound)
        let (event, orphans) = state.withLock { s -> (String?, [Pending]) in
            let now = ContinuousClock.now
            var event: String?
            var orphans: [Pending] = []
            var record: WorkerRecord
            if let existing = s.workers[name] {
                record = existing
                if existing.incarnation != hello.incarnation {
                    // Restarted (perhaps within the heartbeat timeout): whatever it had in flight is lost.
                    event = "worker restarted"
                    orphans = s.takePending(of: name)
                    record.inFlight = 0
                    record.assignsSent = [:]
                    record.dropsSent = [:]
                    s.planDirty = true
                }
                if existing.route != route { s.routes.removeValue(forKey: existing.route) }
            } else {
                event = "worker joined"
                record = WorkerRecord(route: route, incarnation: hello.incarnation, lastSeen: now, credit: credit)
                s.planDirty = true
            }
            record.route = route
            record.connection = connection
            record.disconnected = false
            record.incarnation = hello.incarnation
            record.lastSeen = now
            record.credit = credit
            record.actual = actual
            record.transfers = transfers
            s.workers[name] = record
            s.routes[route] = name
            return (event, orphans)
        }
        failOver(orphans, from: name)
        serveWaiters()  // its credit or shards may have changed
        if let event {
            logger.info("\(event)", metadata: ["worker": .string(name), "threads": "\(hello.threads)", "shards": "\(actual.count)"])
        }
        if state.withLock({ $0.planDirty }) { reconcileAll() } else { reconcile(name) }
        expireKeys(on: name, applied: hello.keysExpiredBefore)
    }

    /// A connection to the socket closed (a worker's process died, or the network reset the connection): if it
    /// was a worker's current one, that worker's queries in flight fail over to other replicas now rather than at
    /// the heartbeat timeout, and it is sent no new ones until it says hello again. It keeps its shards, so a
    /// worker that reconnects at once moves nothing; one that stays away is removed at the heartbeat timeout.
    /// Both races with the socket's own messages end safe: a descriptor number reused by the next connection
    /// before this event is read costs a live worker its queries in flight (answered by another replica) and its
    /// routing until its next heartbeat; a heartbeat read just before the close but handled after it leaves the
    /// lost worker to the heartbeat timeout, as without this event.
    func connectionClosed(_ descriptor: Int32) {
        let (name, orphans) = state.withLock { s -> (String?, [Pending]) in
            guard let name = s.workers.first(where: { $0.value.connection == descriptor && !$0.value.disconnected })?.key else {
                return (nil, [])
            }
            s.workers[name]?.disconnected = true
            s.workers[name]?.inFlight = 0
            return (name, s.takePending(of: name))
        }
        guard let name else { return }
        count("callveil_cluster_worker_disconnects_total")
        logger.warning("worker connection closed", metadata: ["worker": .string(name), "queries_failed_over": "\(orphans.count)"])
        failOver(orphans, from: name)
        serveWaiters()  // the line, with this worker no longer a candidate
    }

    /// Removes workers not heard from within the heartbeat timeout.
    func expireWorkers() {
        let limit = options.heartbeatTimeout
        let now = ContinuousClock.now
        let dead = state.withLock { s in s.workers.filter { now - $0.value.lastSeen > limit }.map(\.key) }
        for worker in dead { removeWorker(worker, reason: "no heartbeat for \(limit)") }
    }

    /// Forgets a worker (lost, drained or revoked): fails its queries in flight over to other replicas and
    /// re-places its shards.
    func removeWorker(_ worker: String, reason: String) {
        let orphans: [Pending]? = state.withLock { s in
            guard let record = s.workers.removeValue(forKey: worker) else { return nil }
            s.routes.removeValue(forKey: record.route)
            s.planDirty = true
            return s.takePending(of: worker)
        }
        guard let orphans else { return }
        logger.warning("worker lost", metadata: ["worker": .string(worker), "reason": .string(reason)])
        failOver(orphans, from: worker)
        serveWaiters()  // those waiting for its credit try the other replicas, or learn there are none
        reconcileAll()
    }

    /// Re-reads the allow-list (SIGHUP): newly listed workers are admitted at their next handshake; workers no
    /// longer listed are refused from their next message on, forgotten now, and their shards re-placed.
    public func configurationReloaded() async {
        guard let zap, let source = options.allowList else { return }
        do {
            let allowed = try source()
            try zap.setAllowed(allowed)
            let names = Set(allowed.values)
            let revoked = state.withLock { s in s.workers.keys.filter { !names.contains($0) } }
            for worker in revoked { removeWorker(worker, reason: "revoked") }
            logger.info("worker allow-list reloaded", metadata: ["workers": "\(names.count)", "revoked": "\(revoked.count)"])
        } catch {
            logger.error("worker allow-list not reloaded; keeping the previous one", metadata: ["error": .string("\(error)")])
        }
    }
}

extension ClusterCoordinator {
    /// Resumes the queries a lost or restarted worker had in flight with `WorkerLost`, so each is retried on
    /// another replica.
    func failOver(_ orphans: [Pending], from worker: String) {
        for p in orphans { p.continuation?.resume(throwing: WorkerLost(worker: worker)) }
    }
}

extension ClusterCoordinator.State {
    /// Takes `worker`'s queries in flight out of the pending table (lost with it, to be failed over).
    mutating func takePending(of worker: String) -> [ClusterCoordinator.Pending] {
        pending.filter { $0.value.worker == worker }.map(\.key).compactMap { pending.removeValue(forKey: $0) }
    }
}

/// A query's worker was lost or restarted before answering: retried on another replica.
struct WorkerLost: Error, CustomStringConvertible {
    let worker: String
    var description: String { "worker \(worker) was lost" }
}
