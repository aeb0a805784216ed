import ClusterTransport
import Foundation
import LookupEngine
import LookupProtocol
import LookupWorker

extension ClusterCoordinator {
    public func execute(_ query: ShardQuery) async throws -> ProtoPIRResponse {
        let shard = ShardKey(useCase: query.useCase, configID: query.configID, shard: query.shardIndex)
        var request = query.wireRequest
        var tried = Set<String>()
        let deadline = ContinuousClock.now + options.requestTimeout
        for _ in 0..<options.maxAttempts {
            var choice = reserve(shard, owner: query.key.user ?? "", excluding: tried)
            if case .busy = choice {
                // Every replica at its credit: wait in line for a slot (back-pressure) rather than overload a
                // worker, but only so many queries and only so long; beyond, shed with 503 + Retry-After.
                choice = try await waitForCredit(shard, owner: query.key.user ?? "", excluding: tried,
                                                 until: min(deadline, ContinuousClock.now + options.queueTimeout))
                if case .busy = choice {
                    options.metrics?.increment("callveil_cluster_queries_shed_total")
                    throw EngineError(.overloaded, "Server busy: no replica had capacity in time")
                }
            }
            guard case .reserved(let worker, let id) = choice else { break }
            tried.insert(worker)
            let hop = options.metrics?.beginStage(.clusterRoundTrip)
            request.traceContext = hop?.traceCarrier ?? [:]
            do {
                let response = try await call(worker: worker, id: id, request: request)
                hop?.end()
                return response
            } catch let failure as WorkerFailure {
                hop?.end(failed: true)
                logger.warning("retrying a query on another replica", metadata: ["shard": "\(shard)", "worker": .string(worker),
                                                                                 "reason": .string(failure.reason)])
            } catch is WorkerLost {
                hop?.end(failed: true)
                continue  // lost or restarted before answering: the next replica
            } catch {
                hop?.end(failed: true)
                throw error
            }
        }
        throw EngineError(.unavailable, "No replica of shard \(shard.shard) is available; retry later")
    }

    enum Reservation {
        case reserved(String, UInt64)
        case busy
        /// No live worker holds the shard (outside those excluded).
        case unheld
    }

    /// Picks a live replica with credit left among those reporting the desired content (or, while no copy has it
    /// yet, the previous content): the owner's affinity replica when it has credit, else the one with the fewest
    /// queries in flight; and registers a request id.
    func reserve(_ shard: ShardKey, owner: String, excluding: Set<String>) -> Reservation {
        state.withLock { $0.reserve(shard, owner: owner, excluding: excluding) }
    }

    /// Waits in line (served fairly across owners, `CreditLine`) until a replica of `shard` has credit, the worker
    /// set changes so that none holds it (`.unheld`), or `until` passes (`.busy`). Refused at once when the line is
    /// full and no owner holds more of it than `owner`; throws `CancellationError` when the client goes away.
    func waitForCredit(_ shard: ShardKey, owner: String, excluding: Set<String>, until: ContinuousClock.Instant) async throws -> Reservation {
        let ticket = UInt64.random(in: 1...UInt64.max)
        let timer = Task { [weak self] in
            try await Task.sleep(until: until)
            self?.withdrawWaiter(ticket)
        }
        defer { timer.cancel() }
        let outcome: Reservation? = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Reservation?, Never>) in
                let (immediate, pushedOut) = state.withLock { s -> (Reservation??, CreditLine.Waiter?) in
                    if Task.isCancelled { return (.some(.busy), nil) }
                    let choice = s.reserve(shard, owner: owner, excluding: excluding)  // a slot may have freed since the first try
                    guard case .busy = choice else { return (.some(choice), nil) }
                    let waiter = CreditLine.Waiter(ticket: ticket, owner: owner, shard: shard, excluding: excluding, continuation: continuation)
                    let (admitted, pushedOut) = s.line.admit(waiter, capacity: options.maxWaitingQueries)
                    return (admitted ? Reservation??.none : .some(nil), pushedOut)
                }
                pushedOut?.continuation.resume(returning: nil)
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: { [weak self] in
            self?.withdrawWaiter(ticket)
        }
        guard let outcome else {
            options.metrics?.increment("callveil_cluster_queries_shed_total")
            throw EngineError(.overloaded, "Server busy: every replica is at capacity")
        }
        if Task.isCancelled {
            if case .reserved(let worker, _) = outcome { release(worker) }
            throw CancellationError()
        }
        return outcome
    }

    /// Takes a waiter out of line (its wait timed out or its client went away); a no-op once it was served.
    func withdrawWaiter(_ ticket: UInt64) {
        state.withLock { $0.line.withdraw(ticket) }?.continuation.resume(returning: .busy)
    }

    /// Returns one unit of a worker's credit that was reserved but not used, and serves the line.
    func release(_ worker: String) {
        hand(state.withLock { $0.returnCredit(worker) })
    }

    /// Serves the line after the worker set, their credit or their shards changed.
    func serveWaiters() {
        hand(state.withLock { $0.serveWaiters() })
    }

    /// Resumes the waiters the line was served to (outside the state lock).
    func hand(_ grants: [(CreditLine.Waiter, Reservation)]) {
        for (waiter, choice) in grants { waiter.continuation.resume(returning: choice) }
    }

    /// Sends a query and waits for its answer. If the client goes away meanwhile, the worker is told to drop it
    /// (`QueryCancel`) and the caller returns at once, but the worker's credit stays taken until the worker
    /// answers or the request times out, so a worker is never sent more than it accepts.
    func call(worker: String, id: UInt64, request: Callveil_Cluster_V1_QueryRequest) async throws -> ProtoPIRResponse {
        let timeout = options.requestTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.fail(id, WorkerFailure(reason: "no answer in time"))
        }
        defer {
            // Settled (answered, failed, lost): the timer is no longer needed. Abandoned: it stays, to return
            // the credit should the worker never answer.
            if state.withLock({ $0.pending[id] == nil }) { timer.cancel() }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let registered = state.withLock { s -> (any Error)? in
                    guard !s.stopped else { return EngineError(.unavailable, "coordinator stopping") }
                    guard !Task.isCancelled else { return CancellationError() }
                    s.pending[id] = Pending(continuation: continuation, worker: worker)
                    return nil
                }
                if let refusal = registered {
                    release(worker)
                    return continuation.resume(throwing: refusal)
                }
                send(to: worker, .with {
                    $0.requestID = id
                    $0.query = request
                })
            }
        } onCancel: { [weak self] in
            self?.abandon(id)
        }
    }

    /// The client of a query in flight went away: it returns now, and its worker is told to drop the query.
    func abandon(_ id: UInt64) {
        let abandoned = state.withLock { s -> (String, CheckedContinuation<ProtoPIRResponse, any Error>)? in
            guard let pending = s.pending[id], let continuation = pending.continuation else { return nil }
            s.pending[id]?.continuation = nil
            return (pending.worker, continuation)
        }
        guard let (worker, continuation) = abandoned else { return }
        options.metrics?.increment("callveil_cluster_queries_cancelled_total")
        send(to: worker, .with {
            $0.requestID = id
            $0.cancel = .init()
        })
        continuation.resume(throwing: CancellationError())
    }

    /// Settles a request: forgets it, returns its worker's credit and serves the line.
    func settle(_ id: UInt64, where accept: (Pending) -> Bool = { _ in true }) -> Pending? {
        let (pending, grants) = state.withLock { s -> (Pending?, [(CreditLine.Waiter, Reservation)]) in
            guard let p = s.pending[id], accept(p) else { return (nil, []) }
            s.pending.removeValue(forKey: id)
            return (p, s.returnCredit(p.worker))
        }
        hand(grants)
        return pending
    }

    func fail(_ id: UInt64, _ error: any Error) {
        settle(id)?.continuation?.resume(throwing: error)
    }

    /// A worker's answer: accepted only for a request sent to that very worker; its error code is mapped through
    /// the allow-list of codes (anything else is treated as a worker fault and retried elsewhere). The answer to
    /// an abandoned request only returns the credit.
    func reply(from name: String, id: UInt64, _ reply: Callveil_Cluster_V1_QueryReply) {
        guard let pending = settle(id, where: { $0.worker == name }) else {
            return reject("reply to an unknown or foreign request", worker: name)
        }
        guard let continuation = pending.continuation else { return }
        switch reply.errorCode {
        case .none:
            continuation.resume(returning: reply.response)
        case let code where !code.isRetryable:
            continuation.resume(throwing: code.engineError(message: reply.errorMessage))
        default:
            continuation.resume(throwing: WorkerFailure(reason: "\(reply.errorCode)"))
        }
    }
}

extension ClusterCoordinator.State {
    /// See `ClusterCoordinator.reserve`.
    mutating func reserve(_ shard: ShardKey, owner: String, excluding: Set<String>) -> ClusterCoordinator.Reservation {
        let wanted = desired.shards[shard]?.sha256
        var holders = workers.filter { !excluding.contains($0.key) && $0.value.actual[shard] != nil && $0.value.actual[shard] == wanted }
        if holders.isEmpty { holders = workers.filter { !excluding.contains($0.key) && $0.value.actual[shard] != nil } }
        let candidates = holders.filter { !$0.value.disconnected && $0.value.inFlight < $0.value.credit }
        let preferred = KeyAffinity.replica(for: owner, among: holders.keys)
        guard let best = candidates.first(where: { $0.key == preferred })
                ?? candidates.min(by: { ($0.value.inFlight, $0.key) < ($1.value.inFlight, $1.key) }) else {
            return holders.isEmpty ? .unheld : .busy
        }
        workers[best.key]?.inFlight += 1
        var id = UInt64.random(in: 1...UInt64.max)  // unguessable: a worker cannot answer for another's request
        while pending[id] != nil { id = UInt64.random(in: 1...UInt64.max) }
        return .reserved(best.key, id)
    }

    /// Returns one unit of `worker`'s credit and serves the line with it.
    mutating func returnCredit(_ worker: String) -> [(CreditLine.Waiter, ClusterCoordinator.Reservation)] {
        if let inFlight = workers[worker]?.inFlight, inFlight > 0 { workers[worker]?.inFlight = inFlight - 1 }
        return serveWaiters()
    }

    /// Hands freed credit to the line; a waiter whose shard no live worker holds any more is told so.
    mutating func serveWaiters() -> [(CreditLine.Waiter, ClusterCoordinator.Reservation)] {
        guard line.count > 0 else { return [] }
        // Moved out while `reserve` mutates the rest of the state (moved, not copied: no copy of the waiters).
        var line = self.line
        self.line = CreditLine()
        defer { self.line = line }
        return line.serve { waiter in reserve(waiter.shard, owner: waiter.owner, excluding: waiter.excluding) }
    }
}

/// A worker could not answer (busy, not holding the shard, a fault, no answer in time): the query is retried on
/// another replica.
struct WorkerFailure: Error {
    let reason: String
}
