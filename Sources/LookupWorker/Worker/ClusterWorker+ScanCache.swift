import BFV
import ClusterTransport
import Foundation
import LookupEngine
import PIR

extension ClusterWorker {
    /// Where a loaded shard's database lives.
    enum Residence: Sendable {
        /// In this process's memory, counted against the budget.
        case resident(Int)
        /// Mapped from its scan file, paged by the kernel.
        case mapped(Int)
    }

    /// A server for content `sha` of shard `key`: mapped from its scan file when a verified one is cached (a
    /// restart then skips rebuilding the evaluation form); otherwise rebuilt from the shard file (read from disk
    /// when not given) and cached as a scan file for next time. Blocking; run off the event loops.
    func buildServer(_ key: ShardKey, sha: [UInt8], parameters: MulPirParameters, context: Context, file: [UInt8]?) throws -> MulPirServer {
        let scanPath = files.scanPath(key, sha256: sha)
        if options.scanCache, FileManager.default.fileExists(atPath: scanPath) {
            do {
                let server = try MulPirServer(context: context, parameters: parameters, scanFile: scanPath, tag: sha, threads: options.threads)
                state.withLock { $0.scanCacheLoads += 1 }
                return server
            } catch {
                logger.warning("scan cache refused; rebuilding it", metadata: ["shard": "\(key)", "error": "\(error)"])
                try? FileManager.default.removeItem(atPath: scanPath)
            }
        }
        let bytes = try file ?? readShardFile(key, sha: sha)
        let server = try MulPirServer(context: context, parameters: parameters, shardFile: bytes, threads: options.threads)
        if options.scanCache, server.supportsScanFile {
            do {
                try server.writeScanFile(path: scanPath, tag: sha)
            } catch {
                logger.warning("cannot write the scan cache", metadata: ["shard": "\(key)", "error": "\(error)"])
            }
        }
        return server
    }

    /// The shard file of content `sha`, checked against its hash.
    func readShardFile(_ key: ShardKey, sha: [UInt8]) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: files.path(key, sha256: sha)), TransferSource.digest([UInt8](data)) == sha else {
            throw ClusterError.badChunk("the shard file is missing or does not match its hash")
        }
        return [UInt8](data)
    }

    /// Holds `server`'s database in memory when it fits the budget beside the other resident shards (copying a
    /// mapped one in), otherwise serves it mapped from its scan file. The bytes are reserved until the install
    /// records them (`record`) or `settleResidence` releases them, so loads running at once do not overrun the
    /// budget together.
    func placeWithinBudget(_ key: ShardKey, sha: [UInt8], server: MulPirServer) throws -> (MulPirServer, Residence) {
        let bytes = server.databaseBytes
        let fits = state.withLock { s -> Bool in
            guard let budget = options.memoryBudget else { return true }
            let others = s.resident.filter { $0.key != key }.values.reduce(0, +) + s.reserved.filter { $0.key != key }.values.reduce(0, +)
            guard others + bytes <= budget else { return false }
            s.reserved[key] = bytes
            return true
        }
        if fits { return (try server.residentCopy(), .resident(bytes)) }
        if server.mappedBytes == bytes { return (server, .mapped(bytes)) }
        let scanPath = files.scanPath(key, sha256: sha)
        guard server.supportsScanFile, FileManager.default.fileExists(atPath: scanPath) else {
            logger.warning("shard over the memory budget has no scan file; holding it in memory", metadata: ["shard": "\(key)"])
            return (server, .resident(bytes))
        }
        let mapped = try MulPirServer(context: server.context, parameters: server.parameters, scanFile: scanPath, tag: sha,
                                      threads: options.threads)
        return (mapped, .mapped(bytes))
    }

    /// Moves a shard's bytes from reserved to where it lives, in the same lock as whatever else the caller
    /// records (a shard is never counted loaded without its bytes); idempotent.
    static func record(_ residence: Residence?, of key: ShardKey, in s: inout State) {
        s.reserved.removeValue(forKey: key)
        switch residence {
        case .resident(let bytes)?:
            s.resident[key] = bytes
            s.mapped.removeValue(forKey: key)
        case .mapped(let bytes)?:
            s.mapped[key] = bytes
            s.resident.removeValue(forKey: key)
        case nil:
            if s.loaded[key] == nil {
                s.resident.removeValue(forKey: key)
                s.mapped.removeValue(forKey: key)
            }
        }
    }

    /// Releases a shard's reservation, forgets its bytes unless it is loaded (a failed, superseded or dropped
    /// load), and publishes the totals as `callveil_worker_shard_bytes{backing}`.
    func settleResidence(_ key: ShardKey) {
        let (resident, mapped) = state.withLock { s -> (Int, Int) in
            Self.record(nil, of: key, in: &s)
            return (s.resident.values.reduce(0, +), s.mapped.values.reduce(0, +))
        }
        options.metrics?.set("callveil_worker_shard_bytes", resident, dimensions: [("backing", "memory")])
        options.metrics?.set("callveil_worker_shard_bytes", mapped, dimensions: [("backing", "mapped")])
    }
}
