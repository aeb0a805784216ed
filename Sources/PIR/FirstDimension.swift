import BFV
import CKernels
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
        let words = selectors.map { list in
            list.map { ct in ct.converted(to: .eval).polys.flatMap { $0.data.map { UInt32(truncatingIfNeeded: $0) } } }
        }
        return try compute(selectorWords: words, matrix: matrix, chunk: chunk)
    }

    /// Columns per query from selectors given as 32-bit evaluation-form words (`[query][row]`, each 2 polynomials
    /// × RNS rows × N).
    func compute(selectorWords selectors: [[[UInt32]]], matrix: DatabaseMatrix, chunk: Int) throws -> [[Ciphertext]] {
        let ctx = context.ciphertextContext
        let half = ctx.rowCount * context.degree
        return try computeWords(selectorWords: selectors, matrix: matrix, chunk: chunk).map { columns in
            try columns.map { slice in
                let words = Array(slice)
                // Reduced by the kernel below each modulus.
                let polys = (0..<2).map { poly in
                    PolyRq(unchecked: ctx, format: .eval, data: words[(poly * half)..<((poly + 1) * half)].map { UInt64($0) })
                }
                return try Ciphertext(context: context, polys: polys)
            }
        }
    }

    /// Selectors of a batch in the scan's order: `[RNS row][block][selector row][stream][32 coefficients]`, stream
    /// = query · 2 + polynomial.
    struct PackedSelectors {
        let words: [UInt32]
        let queries: Int
    }

    /// Packs evaluation-form selector words (`[query][row]`, each 2 polynomials × RNS rows × N) for the scan.
    func pack(selectorWords selectors: [[[UInt32]]]) throws -> PackedSelectors {
        let d0 = parameters.dimensions[0]
        let streams = 2 * selectors.count
        let rows = context.ciphertextContext.rowCount
        let n = context.degree
        let rowStride = rows * n
        let width = DatabaseMatrix.blockWidth
        let blocks = n / width
        guard selectors.allSatisfy({ $0.count == d0 && $0.allSatisfy { $0.count == 2 * rowStride } }) else {
            throw PIRError.invalidQuery("first-dimension selectors must be \(d0) ciphertexts per query")
        }
        // Every word is copied below (each query has d0 full selectors), so no zero fill.
        var packed = [UInt32](unsafeUninitializedCapacity: rows * blocks * d0 * streams * width) { _, count in
            count = rows * blocks * d0 * streams * width
        }
        packed.withUnsafeMutableBufferPointer { dst in
            guard let out = dst.baseAddress else { return }
            for (q, list) in selectors.enumerated() {
                for (row, words) in list.enumerated() {
                    words.withUnsafeBufferPointer { src in
                        guard let from = src.baseAddress else { return }
                        for poly in 0..<2 {
                            let stream = q * 2 + poly
                            for r in 0..<rows {
                                for b in 0..<blocks {
                                    let base = (((r * blocks + b) * d0 + row) * streams + stream) * width
                                    (out + base).update(from: from + poly * rowStride + r * n + b * width, count: width)
                                }
                            }
                        }
                    }
                }
            }
        }
        return PackedSelectors(words: packed, queries: selectors.count)
    }

    /// Columns per query as 32-bit evaluation-form words (`[query][column]`, 2 polynomials × RNS rows × N each),
    /// slices of one buffer.
    func computeWords(selectorWords selectors: [[[UInt32]]], matrix: DatabaseMatrix, chunk: Int) throws
        -> [[ArraySlice<UInt32>]] {
        try computeWords(packed: pack(selectorWords: selectors), matrix: matrix, chunk: chunk)
    }

    /// Columns per query from packed selectors: the database pass.
    func computeWords(packed: PackedSelectors, matrix: DatabaseMatrix, chunk: Int) throws -> [[ArraySlice<UInt32>]] {
        let d0 = parameters.dimensions[0]
        let d1 = parameters.dimensions.count == 2 ? parameters.dimensions[1] : 1
        guard matrix.columnHeight == d0 else { throw PIRError.invalidParameters("matrix columns differ from d0") }
        let batch = packed.queries
        let streams = 2 * batch
        let ctx = context.ciphertextContext
        let rows = ctx.rowCount
        let n = context.degree
        let rowStride = rows * n
        let width = DatabaseMatrix.blockWidth
        let blocks = n / width
        let selectorWords = packed.words
        guard selectorWords.count == rows * blocks * d0 * streams * width else {
            throw PIRError.invalidQuery("packed selectors do not match the shard")
        }
        var output = [UInt32](unsafeUninitializedCapacity: batch * d1 * 2 * rowStride) { _, count in
            // Every word is written by the kernel (all streams, columns, rows and blocks), so no zero fill.
            count = batch * d1 * 2 * rowStride
        }
        // A task sweeps every column over a few blocks; its selectors (d0 × streams × 128 bytes per block) should
        // stay in the L2 cache across the columns, so larger batches take fewer blocks per task.
        let blocksPerTask = max(1, min(8, (256 << 10) / max(d0 * streams * width * 4, 1)))
        let tasksPerRow = (blocks + blocksPerTask - 1) / blocksPerTask
        let tasks = rows * tasksPerRow
        let workers = max(1, min(threads, tasks))
        let moduli = ctx.moduli
        let firstColumn = chunk * parameters.slotsPerChunk / d0
        do {
            let m = UnsafeBufferPointer(start: matrix.words.pointer, count: matrix.words.count)
            matrix.present.withUnsafeBufferPointer { pr in
                selectorWords.withUnsafeBufferPointer { s in
                    output.withUnsafeMutableBufferPointer { o in
                        guard let mp = m.baseAddress, let pp = pr.baseAddress, let sp = s.baseAddress,
                              let op = o.baseAddress else { return }
                        let buffers = ScanBuffers(matrix: mp, present: pp, selectors: sp, output: op)
                        DispatchQueue.concurrentPerform(iterations: workers) { worker in
                            var task = worker
                            while task < tasks {
                                let r = task / tasksPerRow
                                let b0 = (task % tasksPerRow) * blocksPerTask
                                Self.scanTask(buffers: buffers, matrix: matrix, modulus: moduli[r], r: r,
                                              blocks: b0..<min(b0 + blocksPerTask, blocks), streams: streams,
                                              d1: d1, n: n, rowStride: rowStride, firstColumn: firstColumn)
                                task += workers
                            }
                        }
                    }
                }
            }
        }
        return (0..<batch).map { q in
            (0..<d1).map { col in
                let base = (q * d1 + col) * 2 * rowStride
                return output[base..<(base + 2 * rowStride)]
            }
        }
    }

    /// Blocks `blocks` of RNS row `r`, every column, every query: one kernel call per (column, block).
    static func scanTask(buffers: ScanBuffers, matrix: DatabaseMatrix, modulus q: Modulus, r: Int, blocks: Range<Int>,
                         streams: Int, d1: Int, n: Int, rowStride: Int, firstColumn: Int) {
        let width = DatabaseMatrix.blockWidth
        let d0 = matrix.columnHeight
        let lazyTerms = (1 << (64 - 2 * q.bitWidth)) - 2
        let q32 = UInt32(truncatingIfNeeded: q.value)
        let barrett = UInt64.max / q.value
        let selectorBlock = d0 * streams * width
        for col in 0..<d1 {
            let column = firstColumn + col
            let present = buffers.present.advanced(by: column * d0)
            for b in blocks {
                let pt = buffers.matrix.advanced(by: matrix.blockOffset(column: column, row: r, block: b))
                let sel = buffers.selectors.advanced(by: (r * (n / width) + b) * selectorBlock)
                let out = buffers.output.advanced(by: col * 2 * rowStride + r * n + b * width)
                cv_scan_block32(out, d1 * 2 * rowStride, rowStride, pt, present, d0, sel, streams, q32, barrett,
                                lazyTerms)
            }
        }
    }
}
