import ClusterTransport
import Foundation
import LookupProtocol
import LookupWorker

extension ClusterCoordinator {
    /// Sends the chunk a worker asked for, if the request names desired content at an offset inside it.
    func transferRequest(from name: String, _ request: Callveil_Cluster_V1_TransferRequest) {
        guard let (key, sha) = ClusterLimits.validate(request.shard, needsHash: false) else { return reject("shard reference", worker: name) }
        guard let source = state.withLock({ $0.sources[key] }) else { return }  // retired: the worker is told to drop it
        guard sha.isEmpty || sha == source.sha256 else { return }  // old content: the worker is re-assigned the new one
        guard request.offset < UInt64(source.totalBytes) else { return reject("transfer offset", worker: name) }
        do {
            var ref = key.ref
            ref.sha256 = Data(source.sha256)
            let chunk = try source.chunk(for: ref, at: Int(request.offset))
            send(to: name, .with { $0.chunk = chunk })
        } catch {
            logger.warning("bad transfer request", metadata: ["shard": "\(key)", "worker": .string(name), "error": "\(error)"])
        }
    }
}

extension ClusterCoordinator {
    /// Bytes of shard files this coordinator holds in memory for transfers (0 with a spool directory).
    public var transferBytesInMemory: Int {
        state.withLock { $0.sources.values.reduce(0) { $0 + ($1.isInMemory ? $1.totalBytes : 0) } }
    }
}
