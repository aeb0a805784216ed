import ConformanceSupport
import BFV
import CKernels
import Testing

/// The first-dimension scan kernels.
extension KernelTests {
    /// `cv_scan_block32` at every level over selectors laid out `rowStride` words per row (stream s of row r at
    /// `r · rowStride + 32s`): each level's first `streams · 32` output words, streams landing as (pair, poly) =
    /// (s / 2, s % 2), pairs 64 words apart and polys 32.
    static func scanAtEveryLevel(pt: [UInt32], present: [UInt8], rows: Int, selectors: [UInt32], rowStride: Int,
                                 streams: Int, q: UInt32, lazy: Int) -> [[UInt32]] {
        atEveryLevel { () -> [UInt32] in
            var out = [UInt32](repeating: .max, count: ((streams + 1) / 2) * 64)
            selectors.withUnsafeBufferPointer { sp in
                guard let base = sp.baseAddress else { return }
                let bases: [UnsafePointer<UInt32>?] = (0..<streams).map { base + $0 * 32 }
                out.withUnsafeMutableBufferPointer { o in
                    cv_scan_block32(o.baseAddress, 64, 32, pt, present, rows, bases, rowStride, streams, q,
                                    UInt64.max / UInt64(q), lazy)
                }
            }
            return Array(out.prefix(streams * 32))
        }
    }

    @Test("scan block: every level equals the plain sum of products mod q", arguments: [1, 2, 3, 4, 7])
    func scanBlock(streams: Int) throws {
        var rng = TestRandom()
        let q: UInt32 = 268_369_921
        let rows = 37
        let lazy = 5  // forces several reductions inside the block
        let pt = (0..<(rows * 32)).map { _ in UInt32.random(in: 0..<q, using: &rng) }
        let sel = (0..<(rows * streams * 32)).map { _ in UInt32.random(in: 0..<q, using: &rng) }
        let present = (0..<rows).map { UInt8($0 % 5 == 3 ? 0 : 1) }
        var expected = [UInt64](repeating: 0, count: streams * 32)
        for s in 0..<streams {
            for k in 0..<32 {
                var sum: UInt64 = 0
                for r in 0..<rows where present[r] == 1 {
                    sum = (sum + UInt64(pt[r * 32 + k]) * UInt64(sel[(r * streams + s) * 32 + k]) % UInt64(q)) % UInt64(q)
                }
                expected[s * 32 + k] = sum
            }
        }
        // The selectors are read in place: stream s of row r at `bases[s] + r · rowStride` (rows padded apart here,
        // as the expansion's buffer pads its leaves).
        let rowStride = streams * 32 + 24
        var padded = [UInt32](repeating: .max, count: rows * rowStride)
        for r in 0..<rows {
            for i in 0..<(streams * 32) { padded[r * rowStride + i] = sel[r * streams * 32 + i] }
        }
        let outputs = Self.scanAtEveryLevel(pt: pt, present: present, rows: rows, selectors: padded, rowStride: rowStride,
                                            streams: streams, q: q, lazy: lazy).map { $0.map { UInt64($0) } }
        for out in outputs { #expect(out == expected) }
    }

    /// Several columns at once (`cv_scan_columns32`) against the plain sums, at every level: the columns' absent
    /// rows differ and hold garbage words (the multi-column kernels read them as zeros), the lazy bound forces
    /// reductions inside the block, and seven columns take the four-, two- and one-column kernels.
    @Test("scan columns: four, two and one at a time equal the plain sums", arguments: [1, 2, 3, 4])
    func scanColumns(streams: Int) throws {
        var rng = TestRandom()
        let q: UInt32 = 134_176_769
        let rows = 29
        let columns = 7
        let lazy = 4
        let ptStride = rows * 32 + 40
        let pt = (0..<(columns * ptStride)).map { _ in UInt32.random(in: 0..<q, using: &rng) }
        let present = (0..<(columns * rows)).map { i in UInt8((i % rows) % (3 + i / rows) == 1 ? 0 : 1) }
        let rowStride = streams * 32 + 8
        let sel = (0..<(rows * rowStride)).map { _ in UInt32.random(in: 0..<q, using: &rng) }
        // Output: column c, stream s at c · outColumn + (s / 2) · 64 + (s % 2) · 32.
        let outColumn = ((streams + 1) / 2) * 64 + 16
        var expected = [UInt32](repeating: .max, count: columns * outColumn)
        for c in 0..<columns {
            for s in 0..<streams {
                for k in 0..<32 {
                    var sum: UInt64 = 0
                    for r in 0..<rows where present[c * rows + r] == 1 {
                        let product = UInt64(pt[c * ptStride + r * 32 + k]) * UInt64(sel[r * rowStride + s * 32 + k])
                        sum = (sum + product) % UInt64(q)
                    }
                    expected[c * outColumn + (s / 2) * 64 + (s % 2) * 32 + k] = UInt32(sum)
                }
            }
        }
        #expect(present.contains(0) && present.prefix(rows) != present.dropFirst(rows).prefix(rows))
        let outputs = Self.atEveryLevel { () -> [UInt32] in
            var out = [UInt32](repeating: .max, count: columns * outColumn)
            sel.withUnsafeBufferPointer { sp in
                guard let base = sp.baseAddress else { return }
                let bases: [UnsafePointer<UInt32>?] = (0..<streams).map { base + $0 * 32 }
                out.withUnsafeMutableBufferPointer { o in
                    cv_scan_columns32(o.baseAddress, 64, 32, outColumn, pt, ptStride, present, rows, columns, rows,
                                      bases, rowStride, streams, q, UInt64.max / UInt64(q), lazy)
                }
            }
            return out
        }
        for out in outputs { #expect(out == expected) }
    }

    /// Every residue `q − 1` and as many rows as the 64-bit lanes hold between reductions (and past it): the
    /// accumulators come within one product of 2^64, where the vector reduction's quotient estimate is least
    /// precise. `(q − 1)² ≡ 1`, so each output is the number of present rows mod q.
    @Test("scan block at its lazy bound", arguments: [UInt32(268_369_921), 134_176_769, 1_073_479_681, 65_537, 40_961])
    func scanBlockAtBound(q: UInt32) throws {
        let bits = 32 - q.leadingZeroBitCount
        let lazy = (1 << (64 - 2 * bits)) - 2
        let rows = min(2 * lazy + 3, 600)
        let streams = 3
        let pt = [UInt32](repeating: q - 1, count: rows * 32)
        let rowStride = streams * 32
        let sel = [UInt32](repeating: q - 1, count: rows * rowStride)
        let present = [UInt8](repeating: 1, count: rows)
        let outputs = Self.scanAtEveryLevel(pt: pt, present: present, rows: rows, selectors: sel, rowStride: rowStride,
                                            streams: streams, q: q, lazy: lazy)
        for out in outputs { #expect(out == [UInt32](repeating: UInt32(rows % Int(q)), count: streams * 32), "q \(q)") }
    }

    /// Sums just below, at and just above multiples of q, where a quotient estimated in floating point is off by
    /// one either way: the last row of each coefficient is chosen so that its lane's 64-bit sum is ≡ −1, 0 or 1
    /// (mod q), with as many rows as the lanes hold, so the sums are near 2^62–2^64.
    @Test("scan block: sums next to multiples of q", arguments: [UInt32(268_369_921), 134_176_769, 1_073_479_681])
    func scanBlockNearMultiples(q: UInt32) throws {
        var rng = TestRandom()
        let bits = 32 - q.leadingZeroBitCount
        let rows = (1 << (64 - 2 * bits)) - 2
        let streams = 2
        let m = UInt64(q)
        var pt = (0..<(rows * 32)).map { _ in UInt32.random(in: (q / 2)..<q, using: &rng) }
        let sel = (0..<(rows * streams * 32)).map { _ in UInt32.random(in: (q / 2)..<q, using: &rng) }
        // Stream 0 decides the last row: its sums hit the targets; stream 1 gets whatever follows.
        for k in 0..<32 {
            let partial = (0..<(rows - 1)).reduce(UInt64(0)) { ($0 + UInt64(pt[$1 * 32 + k]) * UInt64(sel[$1 * streams * 32 + k])) % m }
            let target = (m + UInt64(k % 3) - 1) % m
            let last = UInt64(sel[(rows - 1) * streams * 32 + k])
            pt[(rows - 1) * 32 + k] = UInt32((target + m - partial) % m * Self.power(last, m - 2, modulo: m) % m)
        }
        var expected = [UInt32](repeating: 0, count: streams * 32)
        for s in 0..<streams {
            for k in 0..<32 {
                expected[s * 32 + k] = UInt32((0..<rows).reduce(UInt64(0)) {
                    ($0 + UInt64(pt[$1 * 32 + k]) * UInt64(sel[($1 * streams + s) * 32 + k])) % m
                })
            }
        }
        #expect((0..<32).allSatisfy { expected[$0] == UInt32((m + UInt64($0 % 3) - 1) % m) })
        let present = [UInt8](repeating: 1, count: rows)
        let outputs = Self.scanAtEveryLevel(pt: pt, present: present, rows: rows, selectors: sel, rowStride: streams * 32,
                                            streams: streams, q: q, lazy: rows)
        for out in outputs { #expect(out == expected, "q \(q)") }
    }
}
