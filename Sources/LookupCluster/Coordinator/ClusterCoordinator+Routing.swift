import Cluster
import Foundation
import LookupProtocol
import LookupService

extension ClusterCoordinator {
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
        let deadline = ContinuousClock.now + options.requestTimeout
        for _ in 0..<options.maxAttempts {
            var choice = reserve(shard, excluding: tried)
            if case .busy = choice {
                // Every replica at its credit: wait for a slot (back-pressure) rather than overload a worker, but only
                // so many queries and only so long; beyond, shed with 503 + Retry-After.
                let admitted = state.withLock { s in
                    guard s.waiting < options.maxWaitingQueries else { return false }
                    s.waiting += 1
                    return true
                }
                guard admitted else {
                    options.metrics?.increment("callveil_cluster_queries_shed_total")
                    throw LookupError.unavailable("Server busy: every replica is at capacity")
                }
                defer { state.withLock { $0.waiting -= 1 } }
                let waitUntil = min(deadline, ContinuousClock.now + options.queueTimeout)
                var pause = Duration.milliseconds(1)
                while case .busy = choice, ContinuousClock.now < waitUntil {
                    try await Task.sleep(for: pause)
                    pause = min(pause * 2, .milliseconds(16))
                    choice = reserve(shard, excluding: tried)
                }
                if case .busy = choice {
                    options.metrics?.increment("callveil_cluster_queries_shed_total")
                    throw LookupError.unavailable("Server busy: no replica had capacity in time")
                }
            }
            guard case .reserved(let worker, let id) = choice else { break }
            tried.insert(worker)
            do {
                return try await call(worker: worker, id: id, request: request)
            } catch let failure as WorkerFailure {
                logger.warning("retrying a query on another replica", metadata: ["shard": "\(shard)", "worker": .string(worker),
                                                                                 "reason": .string(failure.reason)])
            } catch is WorkerLost {
                continue  // lost or restarted before answering: the next replica
            }
        }
        throw LookupError(.serviceUnavailable, "No replica of shard \(shard.shard) is available; retry later")
    }

    enum Reservation {
        case reserved(String, UInt64)
        case busy
        case none
    }

    /// Picks the live replica with the fewest queries in flight that has credit left among those reporting the
    /// desired content (or, while no copy has it yet, the previous content), and registers a request id.
    func reserve(_ shard: ShardKey, excluding: Set<String>) -> Reservation {
        state.withLock { s in
            let wanted = s.desired.shards[shard]?.sha256
            var holders = s.workers.filter { !excluding.contains($0.key) && $0.value.actual[shard] != nil && $0.value.actual[shard] == wanted }
            if holders.isEmpty { holders = s.workers.filter { !excluding.contains($0.key) && $0.value.actual[shard] != nil } }
            let candidates = holders.filter { $0.value.inFlight < $0.value.credit }
            guard let best = candidates.min(by: { ($0.value.inFlight, $0.key) < ($1.value.inFlight, $1.key) }) else {
                return holders.isEmpty ? .none : .busy
            }
            s.workers[best.key]?.inFlight += 1
            var id = UInt64.random(in: 1...UInt64.max)  // unguessable: a worker cannot answer for another's request
            while s.pending[id] != nil { id = UInt64.random(in: 1...UInt64.max) }
            return .reserved(best.key, id)
        }
    }

    func call(worker: String, id: UInt64, request: Callveil_Cluster_V1_QueryRequest) async throws -> ProtoPIRResponse {
        let timeout = options.requestTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.fail(id, WorkerFailure(reason: "no answer in time"))
        }
        defer {
            timer.cancel()
            state.withLock { s in
                if let inFlight = s.workers[worker]?.inFlight, inFlight > 0 { s.workers[worker]?.inFlight = inFlight - 1 }
            }
        }
        return try await withCheckedThrowingContinuation { continuation in
            let registered = state.withLock { s -> Bool in
                guard !s.stopped else { return false }
                s.pending[id] = Pending(continuation: continuation, worker: worker)
                return true
            }
            guard registered else {
                return continuation.resume(throwing: LookupError(.serviceUnavailable, "coordinator stopping"))
            }
            send(to: worker, .with {
                $0.requestID = id
                $0.query = request
            })
        }
    }

    func fail(_ id: UInt64, _ error: any Error) {
        state.withLock { $0.pending.removeValue(forKey: id) }?.continuation.resume(throwing: error)
    }

    /// A worker's answer: accepted only for a request sent to that very worker; its error code is mapped through
    /// the allow-list of codes (anything else is treated as a worker fault and retried elsewhere).
    func reply(from name: String, id: UInt64, _ reply: Callveil_Cluster_V1_QueryReply) {
        let pending = state.withLock { s -> Pending? in
            guard let p = s.pending[id], p.worker == name else { return nil }
            return s.pending.removeValue(forKey: id)
        }
        guard let pending else { return reject("reply to an unknown or foreign request", worker: name) }
        switch reply.errorCode {
        case .none:
            pending.continuation.resume(returning: reply.response)
        case let code where !code.isRetryable:
            pending.continuation.resume(throwing: code.lookupError(message: reply.errorMessage))
        default:
            pending.continuation.resume(throwing: WorkerFailure(reason: "\(reply.errorCode)"))
        }
    }
}

/// A worker could not answer (busy, not holding the shard, a fault, no answer in time): the query is retried on
/// another replica.
struct WorkerFailure: Error {
    let reason: String
}
