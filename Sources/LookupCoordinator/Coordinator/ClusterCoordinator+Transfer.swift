import ClusterTransport
import Foundation
import LookupProtocol
import LookupWorker

extension ClusterCoordinator {
    /// Sends the chunk a worker asked for, if the request names desired content at an offset inside it; a request
    /// from the start by a worker holding the content this one replaced gets the patch between them instead.
    func transferRequest(from name: String, _ request: Callveil_Cluster_V1_TransferRequest) {
        guard let (key, sha) = ClusterLimits.validate(request.shard, needsHash: false) else { return reject("shard reference", worker: name) }
        guard request.patchBase.isEmpty || request.patchBase.count == 32 else { return reject("patch base", worker: name) }
        guard let (source, patch) = state.withLock({ s in s.sources[key].map { ($0, s.patches[key]) } }) else { return }  // retired: the worker is told to drop it
        guard sha.isEmpty || sha == source.sha256 else { return }  // old content: the worker is re-assigned the new one
        guard request.offset < UInt64(source.totalBytes) else { return reject("transfer offset", worker: name) }
        var ref = key.ref
        ref.sha256 = Data(source.sha256)
        if request.offset == 0, !request.patchBase.isEmpty, let patch, patch.sha256 == source.sha256,
           patch.baseSHA256 == [UInt8](request.patchBase) {
            count("callveil_cluster_transfer_bytes_total", [("kind", "patch")], by: patch.frame.count)
            send(to: name, .with { $0.patch = patch.message(for: ref) })
            return
        }
        do {
            let chunk = try source.chunk(for: ref, at: Int(request.offset))
            count("callveil_cluster_transfer_bytes_total", [("kind", "whole")], by: chunk.lz4Frame.count)
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
