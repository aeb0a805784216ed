import BFV
import ClusterTransport
import Foundation
import LookupEngine
import LookupProtocol
import Tracing

extension ClusterWorker {
    /// Answers a query in a task of its own, registered under its link and request id (on the socket's thread, so
    /// before any cancel of it is read) so that a `QueryCancel` can stop it. A duplicate of a query under way is
    /// ignored.
    func startQuery(_ request: Callveil_Cluster_V1_QueryRequest, id: UInt64, link: Int) {
        let query = QueryID(link: link, id: id)
        state.withLock { s in
            guard s.queries[query] == nil, !s.stopped else { return }
            s.queries[query] = Task { [weak self] in
                await self?.answer(request, id: id, link: link)
                self?.state.withLock { _ = $0.queries.removeValue(forKey: query) }
            }
        }
    }

    /// The coordinator's client went away: a query not yet computing is dropped (and answered as cancelled).
    func cancelQuery(_ query: QueryID) {
        state.withLock { $0.queries[query] }?.cancel()
    }

    /// Answers one query from the content held now, on the link it came on; errors travel as cluster error codes.
    func answer(_ request: Callveil_Cluster_V1_QueryRequest, id: UInt64, link: Int) async {
        var reply = Callveil_Cluster_V1_QueryReply()
        if let (key, _) = ClusterLimits.validate(request.shard, needsHash: false),
           let sha = state.withLock({ $0.loaded[key] }),
           executor.holds(useCase: key.useCase, configID: key.configID, index: key.shard) {
            do {
                reply.response = try await Self.$queryLink.withValue(link) {
                    try await traced(request, shard: key) { try await executor.execute(ShardQuery(wire: request, shard: key)) }
                }
                reply.sha256 = Data(sha)
            } catch {
                (reply.errorCode, reply.errorMessage) = ClusterErrorCode.from(error)
            }
        } else {
            reply.errorCode = .shardNotHeld
            reply.errorMessage = "shard not held by this worker"
        }
        send(.with {
            $0.requestID = id
            $0.reply = reply
        }, link: link)
    }

    /// Runs `body` in a span continuing the coordinator's hop when the query carries a trace context and tracing
    /// is on here; the engine's stages (key fetch, queue wait, compute) become its children.
    private func traced<T: Sendable>(_ request: Callveil_Cluster_V1_QueryRequest, shard: ShardKey,
                                     _ body: () async throws -> T) async throws -> T {
        guard let metrics = options.metrics, let tracer = metrics.tracer,
              let carrier = ClusterLimits.traceCarrier(request.traceContext),
              let context = metrics.traceContext(from: carrier) else { return try await body() }
        return try await tracer.withSpan("worker_query", context: context, ofKind: .server) { span in
            span.attributes["callveil.usecase"] = shard.useCase
            span.attributes["callveil.shard"] = Int(shard.shard)
            return try await body()
        }
    }

    /// Drops parsed keys uploaded before the coordinator's expiry cutoff (level-triggered: the Hello reports the
    /// cutoff applied, and the coordinator repeats a newer one until it shows).
    func expireKeys(_ expiry: Callveil_Cluster_V1_KeyExpiry) {
        let cutoff = expiry.uploadedBefore
        guard cutoff.isFinite, cutoff > 0, cutoff <= Date().timeIntervalSince1970 + 86400 else {
            return logger.warning("dropped a key expiry with an impossible cutoff")
        }
        let advanced = state.withLock { s -> Bool in
            guard cutoff > s.keysExpiredBefore else { return false }
            s.keysExpiredBefore = cutoff
            return true
        }
        guard advanced else { return }
        let dropped = executor.cache.dropUploaded(before: cutoff)
        if dropped > 0 {
            state.withLock { $0.keysExpired += dropped }
            options.metrics?.increment("callveil_worker_keys_expired_total", by: dropped)
        }
    }

    /// Parses and caches a pushed key for the use cases this worker serves.
    func cachePushedKey(_ push: Callveil_Cluster_V1_KeyPush) async {
        guard let context = state.withLock({ $0.contexts[[UInt8](push.identifier)] }) else { return }
        try? await executor.cacheKey(user: push.user, identifier: [UInt8](push.identifier), timestamp: push.timestamp,
                                     serialized: [UInt8](push.key), context: context, uploadedAt: push.uploadedAt)
    }
}
