import ClusterTransport
import Foundation
import LookupProtocol

extension ClusterWorker {
    /// A patch for a transfer at its start that offered a base, on the transfer thread: applied to a copy of the
    /// base file (read and checked against its hash), checked against the new content's SHA-256, written beside it
    /// (synced, then renamed into place, so a crash leaves the base and at most a whole new file) and loaded like a
    /// finished transfer. The base keeps answering meanwhile. A patch that does not apply is counted and logged,
    /// and the whole shard fetched.
    func patch(_ message: Callveil_Cluster_V1_ShardPatch) async {
        guard let (key, sha) = ClusterLimits.validate(message.shard, needsHash: true), message.baseSha256.count == 32 else {
            logger.warning("refused a shard patch with out-of-range fields")
            return
        }
        let base = [UInt8](message.baseSha256)
        let claimed = state.withLock { s -> Transfer? in
            guard let transfer = s.transfers[key], transfer.sha256 == sha, !transfer.busy, transfer.offset == 0,
                  transfer.patchBase == base, message.totalBytes == transfer.assign.totalBytes else { return nil }
            transfer.busy = true
            Self.answered(transfer, in: &s)
            return transfer
        }
        guard let transfer = claimed else { return }  // not asked for, or already settled: ignored
        let path = files.path(key, sha256: sha)
        let applied = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[UInt8], any Error>, Never>) in
            transferIO.async { [self] in
                continuation.resume(returning: Result {
                    let bytes = try ShardPatch.apply(message, to: try readShardFile(key, sha: base), target: sha)
                    try SyncedFile.save(bytes, to: path, temporarySuffix: ".writing")
                    return bytes
                })
            }
        }
        enum Step { case load([UInt8]), fetchWhole(any Error), ignore }
        let link = state.withLock { _ in transfer.link }
        let step: Step = state.withLock { s in
            transfer.busy = false
            guard s.transfers[key] === transfer else { return .ignore }  // dropped or replaced meanwhile
            switch applied {
            case .success(let bytes):
                s.transfers.removeValue(forKey: key)
                s.loading[key] = sha
                s.patchesApplied += 1
                return .load(bytes)
            case .failure(let error):
                transfer.patchBase = nil
                s.patchesRefused += 1
                return .fetchWhole(error)
            }
        }
        switch step {
        case .load(let bytes):
            logger.info("shard patched", metadata: ["shard": "\(key)", "patch_bytes": "\(message.lz4Frame.count)"])
            await load(key, sha: sha, assign: transfer.assign, bytes: bytes)
        case .fetchWhole(let error):
            logger.warning("a shard patch did not apply; fetching the whole shard", metadata: ["shard": "\(key)", "error": "\(error)"])
            requestTransfer(key, sha: sha, offset: 0, link: link)
        case .ignore: break
        }
    }
}
