import Crypto
import Foundation
import LZ4
import LookupProtocol

/// Sending side of a shard transfer: the shard file cut into chunks, each an LZ4 frame with the SHA-256 of
/// its decompressed bytes. The bytes are either held in memory or read from a spooled file a chunk at a time, so
/// a coordinator with a spool directory keeps no shard in memory once it is installed.
public struct TransferSource: Sendable {
    enum Storage: Sendable {
        case memory([UInt8])
        case file(String)
    }

    /// SHA-256 of the shard file's bytes.
    public let sha256: [UInt8]
    /// Size of the shard file.
    public let totalBytes: Int
    /// Uncompressed bytes per chunk.
    public let chunkSize: Int
    let storage: Storage

    /// A source over a shard file's bytes, held in memory; `sha256` is their hash when already known (checked as they
    /// were read), else it is computed.
    public init(bytes: [UInt8], sha256: [UInt8]? = nil, chunkSize: Int = 1 << 20) {
        self.sha256 = sha256 ?? TransferSource.digest(bytes)
        self.totalBytes = bytes.count
        self.chunkSize = chunkSize
        self.storage = .memory(bytes)
    }

    /// A source over `bytes` kept as the file `<directory>/<sha256>.cvshard` and read from there per chunk. The file
    /// is written to a temporary name of its own (`….cvshard.<pid>-<random>.partial`), synced and renamed, so a
    /// crash leaves either no file or the whole one, and two writes of the same content never share a temporary; an
    /// existing file of the right size is kept.
    /// `sha256` is the bytes' digest when the caller has it already.
    public static func spooled(_ bytes: [UInt8], sha256: [UInt8]? = nil, in directory: String,
                               chunkSize: Int = 1 << 20) throws -> TransferSource {
        let sha = sha256 ?? digest(bytes)
        let path = spoolPath(sha256: sha, in: directory)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
        if size != bytes.count {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw ClusterError.spool("cannot create \(directory): \(error)")
            }
            try SyncedFile.save(bytes, to: path, temporarySuffix: temporarySuffix)
        }
        return TransferSource(sha256: sha, totalBytes: bytes.count, chunkSize: chunkSize, storage: .file(path))
    }

    init(sha256: [UInt8], totalBytes: Int, chunkSize: Int, storage: Storage) {
        self.sha256 = sha256
        self.totalBytes = totalBytes
        self.chunkSize = chunkSize
        self.storage = storage
    }

    /// Whether the bytes are held in memory (not read from a spooled file).
    public var isInMemory: Bool {
        if case .memory = storage { return true }
        return false
    }

    /// How a spooled file's temporaries end, while they are written.
    private static let temporarySuffix = ".partial"

    /// The spooled file of content `sha256` in `directory`.
    public static func spoolPath(sha256: [UInt8], in directory: String) -> String {
        "\(directory)/\(sha256.map { String(format: "%02x", $0) }.joined()).cvshard"
    }

    /// Removes the spooled files in `directory` other than those of `keeping` (content hashes), and leftovers of
    /// interrupted writes: another process's temporaries (the spool's `DirectoryLock` means none is still writing)
    /// and this process's temporaries of content not kept. Returns how many files it removed.
    @discardableResult
    public static func pruneSpool(_ directory: String, keeping: Set<[UInt8]>) -> Int {
        let kept = Set(keeping.map { URL(fileURLWithPath: spoolPath(sha256: $0, in: directory)).lastPathComponent })
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
        var removed = 0
        for name in names {
            let remove: Bool
            if name.hasSuffix(".cvshard") {
                remove = !kept.contains(name)
            } else if let end = name.range(of: ".cvshard.")?.lowerBound, name.hasSuffix(temporarySuffix) {
                let target = String(name[..<end]) + ".cvshard"
                remove = !kept.contains(target) || !SyncedFile.isOwnTemporary(name, of: target, suffix: temporarySuffix)
            } else {
                remove = false
            }
            if remove, (try? FileManager.default.removeItem(atPath: "\(directory)/\(name)")) != nil { removed += 1 }
        }
        return removed
    }

    /// The SHA-256 of bytes: how a shard's content and each chunk are named and checked.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    /// Bytes `offset..<offset+count` of the shard file.
    func piece(at offset: Int, count: Int) throws -> [UInt8] {
        switch storage {
        case .memory(let bytes):
            return Array(bytes[offset..<offset + count])
        case .file(let path):
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw ClusterError.spool("cannot open \(path) (errno \(errno))") }
            defer { close(descriptor) }
            var piece = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                let n = piece.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw ClusterError.spool("\(path) is shorter than \(offset + count) bytes") }
                done += n
            }
            return piece
        }
    }

    /// The chunk starting at `offset` (which must be a chunk boundary or a resume point below the end).
    public func chunk(for shard: ClusterShardRef, at offset: Int) throws -> Callveil_Cluster_V1_ShardChunk {
        guard offset >= 0, offset < totalBytes || (offset == 0 && totalBytes == 0) else {
            throw ClusterError.badChunk("offset \(offset) outside \(totalBytes) bytes")
        }
        let end = min(offset + chunkSize, totalBytes)
        let piece = try self.piece(at: offset, count: end - offset)
        return try .with {
            $0.shard = shard
            $0.offset = UInt64(offset)
            $0.lz4Frame = Data(try LZ4Frame.compress(piece))
            $0.sha256 = Data(TransferSource.digest(piece))
            $0.totalBytes = UInt64(totalBytes)
        }
    }
}
