import LookupProtocol
import Crypto
import Foundation

/// Reads a text file line by line in bounded memory (1 MiB at a time), hashing every byte it reads, so an
/// input of any size is read once and its fingerprint comes with it.
public struct LineReader {
    /// Bytes read so far.
    public private(set) var bytesRead = 0
    /// The file's size when opened (for progress).
    public let size: Int
    private let path: String
    private let handle: FileHandle
    private var hasher = SHA256()

    /// Opens `path`.
    public init(path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw DatasetError.unreadable(path: path, why: "cannot open") }
        self.path = path
        self.handle = handle
        size = ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.intValue ?? 0
    }

    /// Calls `body` with each line's 1-based number and bytes (without `\n` or `\r\n`), then closes the file and
    /// returns its digest. `progress` gets the bytes read after each chunk.
    public mutating func forEachLine(progress: (Int) -> Void = { _ in },
                                     _ body: (Int, UnsafeBufferPointer<UInt8>) throws -> Void) throws -> DatasetManifest.Input {
        defer { try? handle.close() }
        var carry: [UInt8] = []
        var line = 0
        func emit(_ bytes: UnsafeBufferPointer<UInt8>) throws {
            line += 1
            var count = bytes.count
            if count > 0, bytes[count - 1] == 13 { count -= 1 }
            try body(line, UnsafeBufferPointer(rebasing: bytes[0..<count]))
        }
        try FileDigest.forEachChunk(of: handle, path: path) { chunk in
            hasher.update(data: chunk)
            bytesRead += chunk.count
            carry.append(contentsOf: chunk)
            try carry.withUnsafeBufferPointer { buffer in
                var start = 0
                for i in 0..<buffer.count where buffer[i] == 10 {
                    try emit(UnsafeBufferPointer(rebasing: buffer[start..<i]))
                    start = i + 1
                }
            }
            if let last = carry.lastIndex(of: 10) { carry.removeSubrange(0...last) }
            guard carry.count <= 16 << 20 else {
                throw DatasetError.malformedLines([.init(line: line + 1, why: "a line longer than 16 MiB")])
            }
            progress(bytesRead)
        }
        if !carry.isEmpty { try carry.withUnsafeBufferPointer { try emit($0) } }
        return DatasetManifest.Input(path: path, bytes: bytesRead, sha256: hasher.finalize().hexString)
    }
}
