import Foundation
import LZ4
import LookupProtocol

/// One content of a shard as the byte ranges in which it differs from another: what a coordinator sends a
/// worker that holds the previous content after a data update, instead of the whole shard file. An update in
/// place rewrites only the changed plaintexts, their presence bytes and the file's digest, so the ranges are
/// about the size of the changed plaintexts. Layout-agnostic: it compares file bytes, nothing else.
public struct ShardPatch: Sendable {
    /// One run of new bytes.
    public struct Range: Sendable, Equatable {
        public var offset: Int
        public var data: [UInt8]

        public init(offset: Int, data: [UInt8]) {
            self.offset = offset
            self.data = data
        }
    }

    /// The content the ranges apply to, and the content they make.
    public let baseSHA256: [UInt8], sha256: [UInt8]
    /// Size of the content they make.
    public let totalBytes: Int
    /// The serialized `PatchRanges`, LZ4-compressed: what travels.
    public let frame: [UInt8]
    /// SHA-256 of the serialized ranges.
    public let rangesSHA256: [UInt8]
    /// Bytes the ranges carry (their data, not the framing).
    public let changedBytes: Int
    /// Number of ranges.
    public let rangeCount: Int
    /// Size of the serialized ranges (before compression).
    public let serializedBytes: Int

    /// Largest serialized `PatchRanges` a worker accepts (decompressed): a patch that would be larger is not made.
    public static let maxSerializedBytes = 8 << 20

    /// Runs of equal bytes shorter than this are sent with the changes around them: a range costs about as much
    /// framing, and fewer ranges are cheaper to apply.
    static let mergeGap = 24

    /// The patch from `base` to `target`, or nil when the ranges would carry more than `limit` bytes (the whole
    /// shard is then the cheaper transfer) or serialize to more than `maxSerializedBytes`. Both are read a chunk
    /// at a time.
    public static func between(base: TransferSource, target: TransferSource, limit: Int) throws -> ShardPatch? {
        let limit = min(limit, maxSerializedBytes)
        var ranges: [Range] = []
        var carried = 0
        let block = max(target.chunkSize, 1 << 16)
        let common = min(base.totalBytes, target.totalBytes)
        var offset = 0
        while offset < target.totalBytes {
            let count = min(block, target.totalBytes - offset)
            let new = try target.piece(at: offset, count: count)
            let shared = max(0, min(count, common - offset))
            let old = shared > 0 ? try base.piece(at: offset, count: shared) : []
            for run in differingRuns(old, new) {
                let start = offset + run.lowerBound
                if let last = ranges.last, start - (last.offset + last.data.count) < mergeGap {
                    let gapStart = last.offset + last.data.count - offset
                    // The gap and the run lie in this block unless the previous range ended in the last one.
                    if gapStart >= 0 {
                        carried += run.upperBound - gapStart
                        ranges[ranges.count - 1].data.append(contentsOf: new[gapStart..<run.upperBound])
                    } else {
                        let tail = try target.piece(at: last.offset + last.data.count, count: -gapStart)
                        carried += tail.count + run.upperBound
                        ranges[ranges.count - 1].data.append(contentsOf: tail)
                        ranges[ranges.count - 1].data.append(contentsOf: new[0..<run.upperBound])
                    }
                } else {
                    carried += run.count
                    ranges.append(Range(offset: start, data: Array(new[run])))
                }
                if carried > limit { return nil }
            }
            offset += count
        }
        let patch = try ShardPatch(base: base.sha256, target: target.sha256, totalBytes: target.totalBytes, ranges: ranges)
        return patch.serializedBytes <= maxSerializedBytes ? patch : nil
    }

    /// A patch of `ranges` (ascending, disjoint, inside `totalBytes`) turning content `base` into `target`.
    public init(base: [UInt8], target: [UInt8], totalBytes: Int, ranges: [Range]) throws {
        let serialized = try Callveil_Cluster_V1_PatchRanges.with {
            $0.ranges = ranges.map { range in .with { $0.offset = UInt64(range.offset); $0.data = Data(range.data) } }
        }.serializedBytes() as [UInt8]
        baseSHA256 = base
        sha256 = target
        self.totalBytes = totalBytes
        serializedBytes = serialized.count
        frame = try LZ4Frame.compress(serialized)
        rangesSHA256 = TransferSource.digest(serialized)
        changedBytes = ranges.reduce(0) { $0 + $1.data.count }
        rangeCount = ranges.count
    }

    /// The message carrying this patch for shard `ref` (whose hash is set to the target's).
    public func message(for ref: ClusterShardRef) -> Callveil_Cluster_V1_ShardPatch {
        var ref = ref
        ref.sha256 = Data(sha256)
        return .with {
            $0.shard = ref
            $0.baseSha256 = Data(baseSHA256)
            $0.totalBytes = UInt64(totalBytes)
            $0.lz4Frame = Data(frame)
            $0.sha256 = Data(rangesSHA256)
        }
    }

    /// Applies a received patch to `base` (the content named `base_sha256`): checks the ranges' digest, that they
    /// are ascending, disjoint and inside `total_bytes` (at most `maxSerializedBytes` serialized), and that the
    /// result has the target's SHA-256 (`target`). Throws `ClusterError.badChunk` on any mismatch; `base` is not
    /// changed.
    public static func apply(_ message: Callveil_Cluster_V1_ShardPatch, to base: [UInt8], target: [UInt8]) throws -> [UInt8] {
        guard message.totalBytes <= UInt64(Int.max) else { throw ClusterError.badChunk("patch of \(message.totalBytes) bytes") }
        let total = Int(message.totalBytes)
        let serialized: [UInt8]
        do { serialized = try LZ4Frame.decompress([UInt8](message.lz4Frame), limit: maxSerializedBytes) } catch {
            throw ClusterError.badChunk("patch frame: \(error)")
        }
        guard TransferSource.digest(serialized) == [UInt8](message.sha256) else { throw ClusterError.badChunk("patch checksum mismatch") }
        let ranges: Callveil_Cluster_V1_PatchRanges
        do { ranges = try Callveil_Cluster_V1_PatchRanges(serializedBytes: serialized) } catch {
            throw ClusterError.badChunk("patch ranges do not parse")
        }
        // Growth past the base is always sent as ranges, so a size beyond that is refused before anything is allocated.
        guard total <= base.count + serialized.count else {
            throw ClusterError.badChunk("patch to \(total) bytes from a base of \(base.count) with \(serialized.count) bytes of ranges")
        }
        var out = base
        if out.count > total { out.removeLast(out.count - total) } else { out.append(contentsOf: repeatElement(0, count: total - out.count)) }
        var end: UInt64 = 0
        for range in ranges.ranges {
            guard range.offset >= end, !range.data.isEmpty, range.offset <= UInt64(total),
                  UInt64(range.data.count) <= UInt64(total) - range.offset else {
                throw ClusterError.badChunk("patch range at \(range.offset) out of order or outside \(total) bytes")
            }
            let start = Int(range.offset)
            out.withUnsafeMutableBytes { to in range.data.withUnsafeBytes { from in
                (to.baseAddress! + start).copyMemory(from: from.baseAddress!, byteCount: from.count)
            } }
            end = range.offset + UInt64(range.data.count)
        }
        guard TransferSource.digest(out) == target else { throw ClusterError.badChunk("patched shard failed its SHA-256") }
        return out
    }

    /// The index runs where `new` differs from `old` (positions past `old`'s end always differ), equal runs shorter
    /// than `mergeGap` between them joined. Compares 4 KiB at a time first, so unchanged pages cost one memcmp.
    static func differingRuns(_ old: [UInt8], _ new: [UInt8]) -> [Swift.Range<Int>] {
        var runs: [Swift.Range<Int>] = []
        func add(_ run: Swift.Range<Int>) {
            if let last = runs.last, run.lowerBound - last.upperBound < mergeGap {
                runs[runs.count - 1] = last.lowerBound..<run.upperBound
            } else {
                runs.append(run)
            }
        }
        old.withUnsafeBufferPointer { o in new.withUnsafeBufferPointer { n in
            let page = 4096
            var i = 0
            while i < o.count {
                let length = min(page, o.count - i)
                if memcmp(o.baseAddress! + i, n.baseAddress! + i, length) != 0 {
                    var j = i
                    while j < i + length {
                        if o[j] != n[j] {
                            var k = j + 1
                            while k < i + length, o[k] != n[k] { k += 1 }
                            add(j..<k)
                            j = k
                        } else {
                            j += 1
                        }
                    }
                }
                i += length
            }
        } }
        if new.count > old.count { add(old.count..<new.count) }
        return runs
    }
}
