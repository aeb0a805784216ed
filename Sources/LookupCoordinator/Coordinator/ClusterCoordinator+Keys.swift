import ClusterTransport
import Foundation
import LookupEngine
import LookupProtocol
import LookupWorker

extension ClusterCoordinator {
    /// Pushes a key just stored to the live workers its owner's queries will go to: for each shard of its key config,
    /// the owner's affinity replica among the live workers placed to serve it (the others would parse it for
    /// nothing; a query that spills over to another replica fetches the key there on its miss). Nothing where the
    /// options say the workers share the service's key cache.
    public func keyUploaded(_ key: StoredEvaluationKey) async {
        guard options.pushesKeys else { return }
        let workers = state.withLock { s in
            let shards = s.desired.shards.values.filter { $0.keyConfigHash == key.identifier }.map(\.key)
            let live = Set(s.workers.keys)
            return KeyAffinity.replicas(for: key.user, holdersByShard: shards.map { Array((s.desired.placement[$0] ?? []).filter(live.contains)) })
        }
        let push = ClusterMessage.with {
            $0.keyPush = .with {
                $0.user = key.user
                $0.identifier = Data(key.identifier)
                $0.timestamp = key.timestamp
                $0.key = Data(key.serialized)
                $0.uploadedAt = key.uploadedAt.timeIntervalSince1970
            }
        }
        for worker in workers { send(to: worker, push) }
        state.withLock { $0.keyPushes += workers.count }
        options.metrics?.increment("callveil_cluster_keys_pushed_total", by: workers.count)
    }

    /// Key pushes sent so far (one per worker per key).
    public var keyPushes: Int { state.withLock { $0.keyPushes } }

    /// Tells a worker whose Hello reports an older key-expiry cutoff than the store's (now − the keys' maximum
    /// age, with a slack of a tenth of it, at most a minute, so a worker is not told every 500 ms) to drop the
    /// parsed keys uploaded before it. Repeated on every Hello until the worker reports it.
    func expireKeys(on name: String, applied: Double) {
        let maxAge = keyStore.maxAge
        guard maxAge.isFinite, maxAge > 0 else { return }
        let cutoff = Date().timeIntervalSince1970 - maxAge
        guard applied < cutoff - min(60, maxAge / 10) else { return }
        send(to: name, .with { $0.keyExpiry = .with { $0.uploadedBefore = cutoff } })
    }

    /// Answers a worker's key fetch from the key store.
    func keyRequest(from name: String, id: UInt64, _ request: Callveil_Cluster_V1_KeyRequest) {
        guard request.user.utf8.count <= ClusterLimits.maxUserBytes, request.identifier.count <= ClusterLimits.maxKeyIdentifierBytes else {
            return reject("key request", worker: name)
        }
        Task {
            let stored = try? await keyStore.key(user: request.user, identifier: [UInt8](request.identifier))
            send(to: name, .with {
                $0.requestID = id
                $0.keyReply = .with {
                    $0.found = stored != nil
                    $0.timestamp = stored?.timestamp ?? 0
                    $0.key = Data(stored?.serialized ?? [])
                    $0.uploadedAt = stored?.uploadedAt.timeIntervalSince1970 ?? 0
                }
            })
        }
    }
}
