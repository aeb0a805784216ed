import BFV
import ClusterTransport
import Foundation
import LookupEngine
import LookupProtocol
import PIR

extension ClusterWorker {
    /// Hold this content (idempotent): already loaded or loading, nothing to do; a transfer of it open, ask for
    /// the next chunk again (the last request or chunk may have been lost); on disk and verified, load it;
    /// otherwise start (or resume from a partial file) a transfer. A transfer of other content for the same
    /// shard is abandoned. Chunks are asked for on `link`, the coordinator that sent the assign.
    func assign(_ assign: Callveil_Cluster_V1_AssignShard, link: Int) async {
        var ref = assign.shard
        if ref.sha256.isEmpty { ref.sha256 = assign.sha256 }
        guard let (key, sha) = ClusterLimits.validate(ref, needsHash: true), assign.totalBytes <= ClusterLimits.maxShardBytes,
              assign.shardCount >= 1, assign.shardCount <= ClusterLimits.maxShardIndex, key.shard < assign.shardCount else {
            logger.warning("refused an assign with out-of-range fields")
            return
        }
        enum Step { case nothing, resend(Int, [UInt8]?), open([UInt8]?) }
        let step: Step = state.withLock { s in
            if s.loaded[key] == sha || s.loading[key] == sha { return .nothing }
            if let transfer = s.transfers[key] {
                if transfer.sha256 == sha {
                    transfer.link = link
                    return .resend(transfer.offset, transfer.patchBase)
                }
                s.transfers.removeValue(forKey: key)
            }
            s.loading[key] = sha  // reserved while the file is checked, so a repeated assign does nothing
            return .open(s.loaded[key])
        }
        let held: [UInt8]?
        switch step {
        case .nothing: return
        case .resend(let offset, let base): return requestTransfer(key, sha: sha, offset: offset, link: link, patchBase: base)
        case .open(let loaded): held = loaded
        }
        let path = files.path(key, sha256: sha)
        // Already on disk from an earlier run: load without a transfer (from the scan cache when there is one).
        if options.scanCache, FileManager.default.fileExists(atPath: files.scanPath(key, sha256: sha)) {
            await load(key, sha: sha, assign: assign, bytes: nil)
            return
        }
        if let bytes = try? readShardFile(key, sha: sha) {
            await load(key, sha: sha, assign: assign, bytes: bytes)
            return
        }
        // The content loaded now, if its file is on disk, is offered as the base of a patch.
        let base = held.flatMap { FileManager.default.fileExists(atPath: files.path(key, sha256: $0)) ? $0 : nil }
        do {
            let sink = try TransferSink(path: path, totalBytes: Int(assign.totalBytes), sha256: sha)
            let started = state.withLock { s -> (Int, [UInt8]?)? in
                guard s.loading[key] == sha else { return nil }  // dropped meanwhile
                s.loading.removeValue(forKey: key)
                let transfer = Transfer(assign: assign, link: link, sha256: sha, sink: sink, patchBase: base)
                s.transfers[key] = transfer
                s.transfersStarted += 1
                if sink.offset > 0 { s.resumed[key] = sink.offset }
                return (sink.offset, transfer.patchBase)
            }
            guard let (offset, patchBase) = started else { return }
            if offset > 0 { logger.info("resuming shard transfer", metadata: ["shard": "\(key)", "offset": "\(offset)"]) }
            requestTransfer(key, sha: sha, offset: offset, link: link, patchBase: patchBase)
        } catch {
            _ = state.withLock { $0.loading.removeValue(forKey: key) }
            report(key, sha: sha, ok: false, error: "\(error)")
        }
    }

    /// Asks for content `sha` of a shard from `offset`, naming `patchBase` (content held on disk) when a patch
    /// from it would do, and arms the request's timer: unanswered within the link's retry wait, it is sent again.
    func requestTransfer(_ key: ShardKey, sha: [UInt8], offset: Int, link: Int, patchBase: [UInt8]? = nil) {
        let armed = state.withLock { s -> (request: Int, wait: Duration)? in
            guard let transfer = s.transfers[key], transfer.sha256 == sha else { return nil }
            transfer.request += 1
            transfer.repeated = transfer.requestedOffset == offset
            transfer.requestedOffset = offset
            transfer.requestedAt = .now
            let estimate = s.roundTrips[link] ?? RoundTripEstimate()
            return (transfer.request, estimate.timeout(floor: options.transferRetryFloor, ceiling: options.transferStall,
                                                      unanswered: transfer.unanswered))
        }
        var ref = key.ref
        ref.sha256 = Data(sha)
        send(.with {
            $0.transferRequest = .with {
                $0.shard = ref
                $0.offset = UInt64(offset)
                if let patchBase { $0.patchBase = Data(patchBase) }
            }
        }, link: link)
        guard let armed else { return }
        Task { [weak self] in
            try? await Task.sleep(for: armed.wait)
            self?.requestTimedOut(key, request: armed.request)
        }
    }

    /// A request's timer ran out: if it is still the transfer's latest and no chunk is being written, the same
    /// chunk (or patch) is asked for again. A chunk being written asks for the next one when it settles.
    func requestTimedOut(_ key: ShardKey, request: Int) {
        let again = state.withLock { s -> (sha: [UInt8], offset: Int, link: Int, base: [UInt8]?)? in
            guard !s.stopped, let transfer = s.transfers[key], transfer.request == request, !transfer.busy else { return nil }
            transfer.unanswered += 1
            s.transferRetries += 1
            return (transfer.sha256, transfer.offset, transfer.link, transfer.patchBase)
        }
        guard let again else { return }
        options.metrics?.increment("callveil_worker_transfer_retries_total")
        requestTransfer(key, sha: again.sha, offset: again.offset, link: again.link, patchBase: again.base)
    }

    /// An answer (a chunk or a patch) claimed a transfer: the link is moving again, so the doubled waits end; the
    /// request it answers is a round-trip sample of the link unless that offset had been asked for before (Karn:
    /// the answer may be to either copy).
    static func answered(_ transfer: Transfer, in s: inout State) {
        transfer.unanswered = 0
        guard !transfer.repeated else { return }
        s.roundTrips[transfer.link, default: RoundTripEstimate()].add(.now - transfer.requestedAt)
    }

    /// One chunk: verified and appended; a duplicate (an answer to a repeated request) is ignored; a corrupt one
    /// is asked for again (five in a row fail the transfer, reported). At the end the whole shard's SHA-256 is
    /// checked: a mismatch (a corrupted partial file) is reported and the shard fetched again from the start.
    func chunk(_ chunk: Callveil_Cluster_V1_ShardChunk) async {
        guard let (key, sha) = ClusterLimits.validate(chunk.shard, needsHash: true) else { return }
        let claimed = state.withLock { s -> Transfer? in
            guard let transfer = s.transfers[key], transfer.sha256 == sha, !transfer.busy, chunk.offset == UInt64(transfer.offset) else {
                return nil
            }
            transfer.busy = true
            Self.answered(transfer, in: &s)
            transfer.patchBase = nil  // the coordinator answered with the whole shard: it has no patch for it
            return transfer
        }
        guard let transfer = claimed else { return }
        // Decompress, verify, append with fsync (and at the end read the whole file back) outside the state lock, on
        // the worker's one transfer-I/O thread: with the disk busy these take seconds, and neither the heartbeat nor
        // the threads that wake sleeping tasks may wait for them.
        enum Written: Sendable { case more(Int), complete([UInt8]), badChunk(String), badShard(String) }
        let written = await withCheckedContinuation { (continuation: CheckedContinuation<Written, Never>) in
            transferIO.async {
                let result: Written
                do {
                    if try transfer.sink.accept(chunk) {
                        do { result = .complete(try transfer.sink.finish()) } catch { result = .badShard("\(error)") }
                    } else {
                        result = .more(transfer.sink.offset)
                    }
                } catch {
                    result = .badChunk("\(error)")
                }
                continuation.resume(returning: result)
            }
        }
        enum Step { case next(Int), done(Callveil_Cluster_V1_AssignShard, [UInt8]), retry(Int), restart(String), fail(String), ignore }
        let link = state.withLock { _ in transfer.link }
        let step: Step = state.withLock { s in
            transfer.busy = false
            guard s.transfers[key] === transfer else { return .ignore }  // dropped or replaced meanwhile
            switch written {
            case .more(let offset):
                transfer.offset = offset
                transfer.failures = 0
                return .next(offset)
            case .complete(let bytes):
                s.transfers.removeValue(forKey: key)
                s.loading[key] = sha
                return .done(transfer.assign, bytes)
            case .badChunk(let why):
                transfer.failures += 1
                if transfer.failures >= 5 {
                    s.transfers.removeValue(forKey: key)
                    return .fail(why)
                }
                return .retry(transfer.offset)
            case .badShard(let why):
                s.wholeShardFailures += 1
                transfer.failures += 1
                transfer.offset = 0
                if transfer.failures >= 5 {
                    s.transfers.removeValue(forKey: key)
                    return .fail(why)
                }
                return .restart(why)
            }
        }
        switch step {
        case .next(let offset):
            let total = max(Int(chunk.totalBytes), 1)
            if offset * 10 / total != Int(chunk.offset) * 10 / total {
                logger.info("shard transfer", metadata: ["shard": "\(key)", "received": "\(offset)/\(chunk.totalBytes)"])
            }
            requestTransfer(key, sha: sha, offset: offset, link: link)
        case .retry(let offset):
            logger.warning("rejected a shard chunk; asking again", metadata: ["shard": "\(key)", "offset": "\(offset)"])
            requestTransfer(key, sha: sha, offset: offset, link: link)
        case .restart(let why):
            logger.warning("whole shard failed its checksum; fetching it again", metadata: ["shard": "\(key)"])
            report(key, sha: sha, ok: false, error: why)
            requestTransfer(key, sha: sha, offset: 0, link: link)
        case .done(let assign, let bytes):
            await load(key, sha: sha, assign: assign, bytes: bytes)
        case .fail(let why):
            files.removeFiles(of: key, keeping: state.withLock { $0.loaded[key] })
            report(key, sha: sha, ok: false, error: why)
        case .ignore: break
        }
    }

    /// Verifies, rebuilds (or maps from the scan cache) and installs a shard, within the memory budget, replacing
    /// any other content of it at once; deletes the files of other content of the shard, and reports. `bytes` nil:
    /// the shard file on disk is read if the scan cache cannot be used.
    func load(_ key: ShardKey, sha: [UInt8], assign: Callveil_Cluster_V1_AssignShard, bytes: [UInt8]?) async {
        // Releases the reservation and publishes the totals; the bytes of an installed shard are recorded with it
        // below, so a drop that comes between is not undone here.
        defer { settleResidence(key) }
        do {
            let parameters = try ProtoPirParameters(serializedBytes: [UInt8](assign.parameters))
            let native = try parameters.native()
            let context = try Context.shared(parameters: native.encryption)
            await loads.acquire()
            defer { loads.release() }
            guard state.withLock({ $0.loading[key] == sha }) else { return }  // dropped or superseded while waiting
            let (server, placed) = try await ComputePool.detached { [self] in
                try MulPirServer.transientBuild {  // only the evaluation form stays
                    try placeWithinBudget(key, sha: sha, server: try buildServer(key, sha: sha, parameters: native, context: context, file: bytes))
                }
            }
            guard state.withLock({ $0.loading[key] == sha }) else { return }  // dropped or superseded meanwhile
            executor.installServer(useCase: key.useCase, configID: key.configID, index: key.shard, shardCount: Int(assign.shardCount),
                                   server: server, context: context)
            let current = state.withLock { s -> Bool in
                guard s.loading[key] == sha else { return false }
                s.loading.removeValue(forKey: key)
                s.loaded[key] = sha
                Self.record(placed, of: key, in: &s)
                s.contexts[[UInt8](assign.keyConfigHash)] = context
                return true
            }
            guard current else { return }
            files.removeFiles(of: key, keeping: sha)
            report(key, sha: sha, ok: true, error: "")
            sendHello()
        } catch {
            _ = state.withLock { $0.loading.removeValue(forKey: key) }
            files.removeFiles(of: key, keeping: state.withLock { $0.loaded[key] })
            report(key, sha: sha, ok: false, error: "\(error)")
        }
    }

    /// Stop holding (or fetching) a shard's content; an empty hash means any content. Its files are deleted.
    func drop(_ ref: Callveil_Cluster_V1_ShardRef) {
        guard let (key, sha) = ClusterLimits.validate(ref, needsHash: false) else { return }
        let (droppedLoaded, keep) = state.withLock { s -> (Bool, [UInt8]?) in
            var dropped = false
            if let held = s.loaded[key], sha.isEmpty || held == sha {
                s.loaded.removeValue(forKey: key)
                dropped = true
            }
            if let transfer = s.transfers[key], sha.isEmpty || transfer.sha256 == sha { s.transfers.removeValue(forKey: key) }
            if let loading = s.loading[key], sha.isEmpty || loading == sha { s.loading.removeValue(forKey: key) }
            return (dropped, s.loaded[key] ?? s.transfers[key]?.sha256 ?? s.loading[key])
        }
        if droppedLoaded {
            executor.dropShard(useCase: key.useCase, configID: key.configID, index: key.shard)
            settleResidence(key)
        }
        if keep == nil { files.removeFiles(of: key) } else if !sha.isEmpty { files.removeFiles(of: key, content: sha) }
        sendHello()
    }

    func report(_ key: ShardKey, sha: [UInt8], ok: Bool, error: String) {
        if !ok { logger.error("shard failed to load", metadata: ["shard": "\(key)", "error": .string(error)]) }
        var ref = key.ref
        ref.sha256 = Data(sha)
        broadcast(.with {
            $0.loaded = .with {
                $0.shard = ref
                $0.ok = ok
                $0.error = String(error.prefix(ClusterLimits.maxReasonCharacters))
            }
        })
    }
}
