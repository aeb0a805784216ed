import BFV
import Dispatch

/// The first-dimension matrix-vector product (SPEC-PIR §5.3) for a batch of queries on one sub-table:
/// `I_q[col] = Σ_row selector_q[row] ⊙ plaintext[col·d0 + row]` for every query q and column col.
///
/// Every plaintext is loaded once and used for all queries of the batch (the memory wall is paid once per batch,
/// not per query). Work is split over RNS rows and coefficient blocks across `threads` threads; products of 32-bit
/// residues accumulate lazily in 64-bit words and are reduced once per `2^(64 − 2·bits) − 2` terms; the inner loop
/// allocates nothing and works on raw contiguous buffers.
struct FirstDimension {
    let context: Context
    let parameters: MulPirParameters
    let threads: Int

    /// Columns per query, in evaluation form over the ciphertext moduli.
    func compute(selectors: [[Ciphertext]], matrix: DatabaseMatrix, chunk: Int) throws -> [[Ciphertext]] {
        let d0 = parameters.dimensions[0]
        let d1 = parameters.dimensions.count == 2 ? parameters.dimensions[1] : 1
        let batch = selectors.count
        let ctx = context.ciphertextContext
        let rows = ctx.rowCount
        let n = context.degree
        let rowStride = rows * n
        // Selectors as 32-bit words: ((q · d0 + row) · 2 + poly) · rows · n + r · n + c.
        var selectorWords = [UInt32](repeating: 0, count: batch * d0 * 2 * rowStride)
        selectorWords.withUnsafeMutableBufferPointer { dst in
            for (q, list) in selectors.enumerated() {
                for (row, ct) in list.enumerated() {
                    for poly in 0..<2 {
                        let base = ((q * d0 + row) * 2 + poly) * rowStride
                        ct.polys[poly].data.withUnsafeBufferPointer { src in
                            for i in 0..<rowStride { dst[base + i] = UInt32(truncatingIfNeeded: src[i]) }
                        }
                    }
                }
            }
        }
        var output = [UInt64](repeating: 0, count: batch * d1 * 2 * rowStride)
        let block = batch <= 2 ? 512 : 128
        let blocksPerRow = (n + block - 1) / block
        let tasks = rows * blocksPerRow
        let workers = max(1, min(threads, tasks))
        let moduli = ctx.moduli
        let slotBase = chunk * parameters.slotsPerChunk
        let present = matrix.present
        matrix.words.withUnsafeBufferPointer { m in
            selectorWords.withUnsafeBufferPointer { s in
                output.withUnsafeMutableBufferPointer { o in
                    guard let mp = m.baseAddress, let sp = s.baseAddress, let op = o.baseAddress else { return }
                    let buffers = ScanBuffers(matrix: mp, selectors: sp, output: op)
                    DispatchQueue.concurrentPerform(iterations: workers) { worker in
                        var task = worker
                        while task < tasks {
                            let r = task / blocksPerRow
                            let c0 = (task % blocksPerRow) * block
                            let width = min(block, n - c0)
                            Self.scanTask(buffers: buffers, modulus: moduli[r], r: r, c0: c0, width: width, batch: batch,
                                          d0: d0, d1: d1, rows: rows, n: n, slotBase: slotBase, present: present)
                            task += workers
                        }
                    }
                }
            }
        }
        return try (0..<batch).map { q in
            try (0..<d1).map { col in
                let polys = try (0..<2).map { poly -> PolyRq in
                    let base = ((q * d1 + col) * 2 + poly) * rowStride
                    return try PolyRq(context: ctx, format: .eval, data: Array(output[base..<(base + rowStride)]))
                }
                return try Ciphertext(context: context, polys: polys)
            }
        }
    }

    /// `a0 += s0 ⊙ pt`, `a1 += s1 ⊙ pt` on 8 lanes at a time: 32-bit residues widened to 64-bit products
    /// (one `pmuludq` per two lanes), no reduction.
    @inline(__always)
    static func multiplyAccumulate(a0: UnsafeMutablePointer<UInt64>, a1: UnsafeMutablePointer<UInt64>,
                                   s0: UnsafePointer<UInt32>, s1: UnsafePointer<UInt32>, pt: UnsafePointer<UInt32>,
                                   count: Int) {
        let rawA0 = UnsafeMutableRawPointer(a0)
        let rawA1 = UnsafeMutableRawPointer(a1)
        let rawS0 = UnsafeRawPointer(s0)
        let rawS1 = UnsafeRawPointer(s1)
        let rawP = UnsafeRawPointer(pt)
        var i = 0
        while i &+ 8 <= count {
            let p = SIMD8<UInt64>(truncatingIfNeeded: rawP.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self))
            let x0 = SIMD8<UInt64>(truncatingIfNeeded: rawS0.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self))
            let x1 = SIMD8<UInt64>(truncatingIfNeeded: rawS1.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self))
            let y0 = rawA0.loadUnaligned(fromByteOffset: i &* 8, as: SIMD8<UInt64>.self) &+ x0 &* p
            let y1 = rawA1.loadUnaligned(fromByteOffset: i &* 8, as: SIMD8<UInt64>.self) &+ x1 &* p
            rawA0.storeBytes(of: y0, toByteOffset: i &* 8, as: SIMD8<UInt64>.self)
            rawA1.storeBytes(of: y1, toByteOffset: i &* 8, as: SIMD8<UInt64>.self)
            i &+= 8
        }
        while i < count {
            let p = UInt64(pt[i])
            a0[i] &+= UInt64(s0[i]) &* p
            a1[i] &+= UInt64(s1[i]) &* p
            i &+= 1
        }
    }

    /// One (RNS row, coefficient block) of every column of every query.
    static func scanTask(buffers: ScanBuffers, modulus q: Modulus, r: Int, c0: Int, width: Int, batch: Int,
                         d0: Int, d1: Int, rows: Int, n: Int, slotBase: Int, present: [Bool]) {
        let rowStride = rows * n
        let lazyTerms = (1 << (64 - 2 * q.bitWidth)) - 2
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: batch * 2 * width) { acc in
            guard let a = acc.baseAddress else { return }
            for col in 0..<d1 {
                acc.initialize(repeating: 0)
                var pending = 0
                for row in 0..<d0 {
                    let slot = slotBase + col * d0 + row
                    guard present[slot] else { continue }
                    let pt = buffers.matrix.advanced(by: slot * rowStride + r * n + c0)
                    for qi in 0..<batch {
                        let s0 = buffers.selectors.advanced(by: ((qi * d0 + row) * 2) * rowStride + r * n + c0)
                        let s1 = s0.advanced(by: rowStride)
                        let a0 = a.advanced(by: qi * 2 * width)
                        let a1 = a0.advanced(by: width)
                        Self.multiplyAccumulate(a0: a0, a1: a1, s0: s0, s1: s1, pt: pt, count: width)
                    }
                    pending += 1
                    if pending == lazyTerms {
                        for i in 0..<(batch * 2 * width) { a[i] = q.reduce(a[i]) }
                        pending = 1
                    }
                }
                for qi in 0..<batch {
                    for poly in 0..<2 {
                        let dst = buffers.output.advanced(by: ((qi * d1 + col) * 2 + poly) * rowStride + r * n + c0)
                        let src = a.advanced(by: (qi * 2 + poly) * width)
                        for i in 0..<width { dst[i] = q.reduce(src[i]) }
                    }
                }
            }
        }
    }
}
