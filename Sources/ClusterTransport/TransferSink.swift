import Foundation
import LZ4
import LookupProtocol

/// Receiving side: appends verified chunks to `<path>.partial` (so a broken transfer resumes where it stopped),
/// and checks the whole shard's SHA-256 at the end.
public final class TransferSink {
    /// Where the finished shard file goes.
    public let path: String
    /// Expected size and SHA-256.
    public let totalBytes: Int, sha256: [UInt8]
    /// Bytes received and verified so far (the offset to ask for).
    public private(set) var offset: Int
    /// Largest accepted chunk.
    public let maxChunkBytes: Int
    private var partialPath: String { path + ".partial" }

    /// A sink; an existing partial file for the same shard (same SHA-256, named in its file) is resumed.
    public init(path: String, totalBytes: Int, sha256: [UInt8], maxChunkBytes: Int = 8 << 20) throws {
        guard totalBytes >= 0, sha256.count == 32 else { throw ClusterError.badChunk("bad transfer size or checksum") }
        self.path = path
        self.totalBytes = totalBytes
        self.sha256 = sha256
        self.maxChunkBytes = maxChunkBytes
        try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path,
                                                withIntermediateDirectories: true)
        let existing = (try? FileManager.default.attributesOfItem(atPath: path + ".partial")[.size] as? NSNumber)?.intValue ?? 0
        offset = existing <= totalBytes ? existing : 0
        if existing > totalBytes { try? FileManager.default.removeItem(atPath: partialPath) }
    }

    /// Verifies and appends one chunk; returns true when the shard is complete and verified.
    public func accept(_ chunk: Callveil_Cluster_V1_ShardChunk) throws -> Bool {
        guard chunk.totalBytes == UInt64(totalBytes) else { throw ClusterError.badChunk("total size changed") }
        guard chunk.offset == UInt64(offset) else { throw ClusterError.badChunk("chunk at \(chunk.offset), expected \(offset)") }
        let piece = try LZ4Frame.decompress([UInt8](chunk.lz4Frame), limit: maxChunkBytes)
        guard TransferSource.digest(piece) == [UInt8](chunk.sha256) else { throw ClusterError.badChunk("checksum mismatch at \(offset)") }
        guard offset + piece.count <= totalBytes, !piece.isEmpty || totalBytes == 0 else { throw ClusterError.badChunk("chunk beyond the end") }
        if !FileManager.default.fileExists(atPath: partialPath) {
            _ = FileManager.default.createFile(atPath: partialPath, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: partialPath))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(piece))
        try handle.synchronize()
        offset += piece.count
        return offset == totalBytes
    }

    /// The complete shard: checks the whole SHA-256 and renames the partial file into place.
    public func finish() throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: partialPath)))
        guard bytes.count == totalBytes, TransferSource.digest(bytes) == sha256 else {
            try? FileManager.default.removeItem(atPath: partialPath)
            offset = 0
            throw ClusterError.badChunk("the whole shard failed its SHA-256; starting over")
        }
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        try FileManager.default.moveItem(atPath: partialPath, toPath: path)
        return bytes
    }
}
