import ClusterTransport
import ConformanceSupport
import Foundation
import Testing

/// Shard patches: the ranges in which a new content differs from the old, applied to the old to give exactly the
/// new; bad patches refused with the base untouched.
@Suite("Shard patch")
struct ShardPatchTests {
    /// A base of `count` random bytes and a target with `edits` random runs rewritten (and its tail grown or cut
    /// by up to 3 KiB); returns both and the number of bytes that differ.
    static func pair(count: Int, edits: Int, using rng: inout TestRandom) -> ([UInt8], [UInt8], Int) {
        let base = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
        var target = base
        for _ in 0..<edits {
            let length = Int.random(in: 1...3000, using: &rng)
            let start = Int.random(in: 0..<count - length, using: &rng)
            for i in start..<start + length { target[i] = UInt8.random(in: 0...255, using: &rng) }
        }
        let resize = Int.random(in: -3072...3072, using: &rng)
        if resize < 0 { target.removeLast(-resize) } else { target += (0..<resize).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let differing = zip(base, target).filter { $0 != $1 }.count + max(0, target.count - base.count)
        return (base, target, differing)
    }

    @Test("Random edits, read in small chunks from memory and from spooled files: the patch makes the target exactly and carries about the changed bytes")
    func roundTrip() throws {
        var rng = TestRandom()
        let spool = NSTemporaryDirectory() + "shard-patch-\(UInt64.random(in: 0...UInt64.max, using: &rng))"
        defer { try? FileManager.default.removeItem(atPath: spool) }
        for round in 0..<24 {
            let (base, target, differing) = Self.pair(count: 200_000, edits: round % 6, using: &rng)
            let chunk = [1 << 20, 4096, 1000, 333][round % 4]
            let (old, new): (TransferSource, TransferSource)
            if round % 2 == 0 {
                (old, new) = (TransferSource(bytes: base, chunkSize: chunk), TransferSource(bytes: target, chunkSize: chunk))
            } else {
                (old, new) = (try TransferSource.spooled(base, in: spool, chunkSize: chunk), try TransferSource.spooled(target, in: spool, chunkSize: chunk))
            }
            let patch = try #require(try ShardPatch.between(base: old, target: new, limit: target.count))
            let message = patch.message(for: .with { $0.usecase = "block"; $0.shard = 1 })
            #expect(try ShardPatch.apply(message, to: base, target: new.sha256) == target, "round \(round)")
            // Equal runs under 24 bytes between changes are carried along: random bytes leave about 1 in 256 equal.
            #expect(patch.changedBytes >= differing && patch.changedBytes <= differing + differing / 8 + 24 * patch.rangeCount,
                    "round \(round): \(patch.changedBytes) bytes carried for \(differing) differing")
            #expect(patch.rangeCount <= 2 * (round % 6) + 1, "round \(round): \(patch.rangeCount) ranges for \(round % 6) edits")
        }
        let same = (0..<50_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let empty = try #require(try ShardPatch.between(base: TransferSource(bytes: same), target: TransferSource(bytes: same), limit: 0))
        #expect(empty.rangeCount == 0 && empty.changedBytes == 0)
    }

    @Test("More changed than the limit: no patch")
    func limit() throws {
        var rng = TestRandom()
        let (base, target, differing) = Self.pair(count: 100_000, edits: 5, using: &rng)
        #expect(try ShardPatch.between(base: TransferSource(bytes: base), target: TransferSource(bytes: target), limit: differing / 2) == nil)
    }

    @Test("A wrong base, a corrupted frame, ranges out of order or past the end: refused with a bad-chunk error")
    func refusals() throws {
        var rng = TestRandom()
        let (base, target, _) = Self.pair(count: 60_000, edits: 3, using: &rng)
        let new = TransferSource(bytes: target)
        let patch = try #require(try ShardPatch.between(base: TransferSource(bytes: base), target: new, limit: target.count))
        let ref = Callveil_Cluster_V1_ShardRef.with { $0.usecase = "identity" }
        func refused(_ message: Callveil_Cluster_V1_ShardPatch, to held: [UInt8]) -> Bool {
            do {
                _ = try ShardPatch.apply(message, to: held, target: new.sha256)
                return false
            } catch let error as ClusterError {
                return error.code == .badChunk
            } catch {
                return false
            }
        }
        // A byte no range covers (equal in both, far from any change) flipped in the base.
        let untouched = try #require((32..<base.count - 32).first { i in (i - 32...i + 32).allSatisfy { base[$0] == target[$0] } })
        var otherBase = base
        otherBase[untouched] ^= 1
        #expect(refused(patch.message(for: ref), to: otherBase), "applied to content other than its base")
        var corrupt = patch.message(for: ref)
        corrupt.lz4Frame[corrupt.lz4Frame.count / 2] ^= 0x40
        #expect(refused(corrupt, to: base), "a corrupted frame")
        var shorter = patch.message(for: ref)
        shorter.totalBytes -= 1
        #expect(refused(shorter, to: base), "a size other than the ranges were made for")
        var huge = patch.message(for: ref)
        huge.totalBytes = 1 << 40
        #expect(refused(huge, to: base), "a size far past what the base and the ranges can make (nothing allocated)")
        let data: [UInt8] = [1, 2, 3]
        for ranges in [[(100, data), (50, data)], [(100, data), (101, data)], [(target.count - 2, data)], [(10, [])]] {
            let bad = try ShardPatch(base: TransferSource.digest(base), target: new.sha256, totalBytes: target.count,
                                     ranges: ranges.map { ShardPatch.Range(offset: $0.0, data: $0.1) })
            #expect(refused(bad.message(for: ref), to: base), "ranges \(ranges.map(\.0))")
        }
    }
}
