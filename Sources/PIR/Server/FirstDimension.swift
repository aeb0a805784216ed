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
        let ctx = context.ciphertextContext
        let half = ctx.rowCount * context.degree
        let owners = try selectors.map { list in
            let words = try SelectorWords(count: list.count, leafWords: 2 * half)
            for (k, ct) in list.enumerated() {
                let eval = ct.converted(to: .eval)
                guard eval.polys.count == 2, eval.moduliCount == ctx.rowCount else {
                    throw PIRError.invalidQuery("first-dimension selectors must be 2-polynomial ciphertexts")
                }
                let leaf = words.leaf(k)
                for (poly, p) in eval.polys.enumerated() {
                    for i in 0..<half { leaf[poly * half + i] = UInt32(truncatingIfNeeded: p.data[i]) }
                }
            }
            return words
        }
        let scan = try ScanSelectors(owners.map { ($0, 0) }, rows: parameters.dimensions[0], half: half)
        return try computeWords(selectors: scan, matrix: matrix, chunk: chunk).map { columns in
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

    /// Columns per query (`[query][column]`, 2 polynomials × RNS rows × N words each, slices of one buffer): the
    /// database pass.
    func computeWords(selectors: ScanSelectors, matrix: DatabaseMatrix, chunk: Int) throws -> [[ArraySlice<UInt32>]] {
        let d1 = parameters.dimensions.count == 2 ? parameters.dimensions[1] : 1
        let rowStride = context.ciphertextContext.rowCount * context.degree
        let batch = selectors.queries
        var output = [UInt32](unsafeUninitializedCapacity: batch * d1 * 2 * rowStride) { _, count in
            // Every word is written by the kernel (all streams, columns, rows and blocks), so no zero fill.
            count = batch * d1 * 2 * rowStride
        }
        try output.withUnsafeMutableBufferPointer { o in
            guard let op = o.baseAddress else { return }
            try pass(selectors: selectors, matrix: matrix, chunk: chunk, output: op)
        }
        return (0..<batch).map { q in
            (0..<d1).map { col in
                let base = (q * d1 + col) * 2 * rowStride
                return output[base..<(base + 2 * rowStride)]
            }
        }
    }

    /// Whether `computeOverSelectors` can take a pass: one chunk (no later pass reads the row selectors again) and no
    /// more columns than row selectors to write them over.
    func columnsFitOverSelectors() -> Bool {
        parameters.chunkCount == 1 && parameters.dimensions.count == 2
            && parameters.dimensions[1] <= parameters.dimensions[0]
    }

    /// The database pass with each pair's column `c` written over its row selector `c` (`SelectorWords` leaf
    /// `firstLeaf + c`), in a leaf's layout: a query then holds no column buffer besides its selectors. A task reads
    /// the selectors of its RNS row and blocks only, so it writes its columns there once it has read them.
    func computeOverSelectors(selectors: ScanSelectors, matrix: DatabaseMatrix, chunk: Int) throws {
        guard columnsFitOverSelectors() else {
            throw PIRError.invalidParameters("the columns do not fit over the row selectors")
        }
        try pass(selectors: selectors, matrix: matrix, chunk: chunk, output: nil)
    }

    /// The pass over the database: columns into `output` (`[query][column]`, 2 polynomials × RNS rows × N words
    /// each), or over the row selectors when nil.
    private func pass(selectors: ScanSelectors, matrix: DatabaseMatrix, chunk: Int,
                      output: UnsafeMutablePointer<UInt32>?) throws {
        let d0 = parameters.dimensions[0]
        let d1 = parameters.dimensions.count == 2 ? parameters.dimensions[1] : 1
        guard matrix.columnHeight == d0 else { throw PIRError.invalidParameters("matrix columns differ from d0") }
        let batch = selectors.queries
        let streams = 2 * batch
        let ctx = context.ciphertextContext
        let rows = ctx.rowCount
        let n = context.degree
        let rowStride = rows * n
        let width = DatabaseMatrix.blockWidth
        let blocks = n / width
        guard selectors.rows == d0, selectors.half == rowStride else {
            throw PIRError.invalidQuery("first-dimension selectors do not match the shard")
        }
        // A task sweeps every column over a few blocks; its selectors (d0 × streams × 128 bytes per block) should
        // stay in the L2 cache across the columns, so larger batches take fewer blocks per task.
        let blocksPerTask = max(1, min(8, (256 << 10) / max(d0 * streams * width * 4, 1)))
        let tasksPerRow = (blocks + blocksPerTask - 1) / blocksPerTask
        let tasks = rows * tasksPerRow
        let workers = max(1, min(threads, tasks))
        let moduli = ctx.moduli
        let firstColumn = chunk * parameters.slotsPerChunk / d0
        let m = UnsafeBufferPointer(start: matrix.words.pointer, count: matrix.words.count)
        matrix.present.withUnsafeBufferPointer { pr in
            guard let mp = m.baseAddress, let pp = pr.baseAddress else { return }
            let buffers = ScanBuffers(matrix: mp, present: pp, selectors: selectors, output: output)
            // Over the selectors, a task's columns go to a buffer of its worker first: d1 columns × streams × its
            // blocks (tens of KiB), then over the selectors it has finished reading.
            let staging = output == nil ? d1 * streams * blocksPerTask * width : 0
            DispatchQueue.concurrentPerform(iterations: workers) { worker in
                withUnsafeTemporaryAllocation(of: UInt32.self, capacity: max(staging, 1)) { stage in
                    var task = worker
                    while task < tasks {
                        let r = task / tasksPerRow
                        let b0 = (task % tasksPerRow) * blocksPerTask
                        Self.scanTask(buffers: buffers, staging: stage.baseAddress, matrix: matrix, modulus: moduli[r],
                                      r: r, blocks: b0..<min(b0 + blocksPerTask, blocks), streams: streams,
                                      d1: d1, n: n, rowStride: rowStride, firstColumn: firstColumn)
                        task += workers
                    }
                }
            }
        }
        withExtendedLifetime(selectors) {}
    }

    /// Blocks `blocks` of RNS row `r`, every column, every query: one kernel call per block and group of up to four
    /// columns. Without an output buffer the columns go to `staging` (`[pair][polynomial][column][block]`) and then
    /// over the row selectors of the same row and blocks, which no other task reads.
    static func scanTask(buffers: ScanBuffers, staging: UnsafeMutablePointer<UInt32>?, matrix: DatabaseMatrix,
                         modulus q: Modulus, r: Int, blocks: Range<Int>, streams: Int, d1: Int, n: Int, rowStride: Int,
                         firstColumn: Int) {
        let width = DatabaseMatrix.blockWidth
        let d0 = matrix.columnHeight
        let lazyTerms = (1 << (64 - 2 * q.bitWidth)) - 2
        let q32 = UInt32(truncatingIfNeeded: q.value)
        let barrett = UInt64.max / q.value
        let bases = buffers.selectors.bases
        let selectorRowStride = buffers.selectors.rowStride
        // Output addressing: into the columns buffer (row r's words), or into the staging buffer of this task's
        // blocks (its first block at word 0); block b of column `col` then starts at `col · columnStride + origin +
        // b · width` either way.
        let span = blocks.count * width
        let (pairStride, polyStride, columnStride, origin): (Int, Int, Int, Int) = buffers.output != nil
            ? (d1 * 2 * rowStride, rowStride, 2 * rowStride, r * n)
            : (2 * d1 * span, d1 * span, span, -blocks.lowerBound * width)
        guard let target = buffers.output ?? staging else { return }
        withUnsafeTemporaryAllocation(of: UnsafePointer<UInt32>?.self, capacity: streams) { sel in
            guard let table = sel.baseAddress else { return }
            // Up to four columns per kernel call: one query's selector rows are then loaded once for all of them.
            for col in stride(from: 0, to: d1, by: 4) {
                let column = firstColumn + col
                let columns = min(4, d1 - col)
                let present = buffers.present.advanced(by: column * d0)
                for b in blocks {
                    let pt = buffers.matrix.advanced(by: matrix.blockOffset(column: column, row: r, block: b))
                    for s in 0..<streams { table[s] = bases[s] + (r * n + b * width) }
                    let out = target.advanced(by: col * columnStride + origin + b * width)
                    cv_scan_columns32(out, pairStride, polyStride, columnStride, pt, matrix.columnStride,
                                      present, d0, columns, d0, table, selectorRowStride, streams, q32, barrett,
                                      lazyTerms)
                }
            }
        }
        guard buffers.output == nil else { return }
        // Every selector of this row and these blocks has been read: column c of stream s over its row selector c.
        for s in 0..<streams {
            let from = target.advanced(by: (s / 2) * pairStride + (s % 2) * polyStride)
            let to = UnsafeMutablePointer(mutating: bases[s]).advanced(by: r * n + blocks.lowerBound * width)
            for c in 0..<d1 {
                (to + c * selectorRowStride).update(from: from + c * columnStride, count: span)
            }
        }
    }
}
