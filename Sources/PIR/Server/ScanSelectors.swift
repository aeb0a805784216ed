/// The row selectors one database pass reads, left where the query expansion wrote them: for each stream
/// (pair · 2 + polynomial) the first word of its row 0, the rows `rowStride` words apart.
///
/// Holding the `SelectorWords` keeps the addresses valid for as long as the pass runs; the pass reads the words, and
/// `FirstDimension.computeOverSelectors` writes its columns over them once each task has read its part.
struct ScanSelectors: @unchecked Sendable {
    /// The allocations the addresses point into.
    let owners: [SelectorWords]
    /// First word of row 0 of each stream.
    let bases: [UnsafePointer<UInt32>]
    /// Words from one row's selector to the next.
    let rowStride: Int
    /// Selector rows per stream (`d0`).
    let rows: Int
    /// Words of one polynomial (RNS rows × N).
    let half: Int

    /// (query, PIR call) pairs of the pass.
    var queries: Int { bases.count / 2 }

    /// The streams of `pairs`, each a query's selector leaves from `firstLeaf` on (`rows` of them, 2 polynomials
    /// of `half` words each).
    init(_ pairs: [(words: SelectorWords, firstLeaf: Int)], rows: Int, half: Int) throws {
        guard let stride = pairs.first?.words.stride else { throw PIRError.invalidQuery("no first-dimension selectors") }
        var bases: [UnsafePointer<UInt32>] = []
        bases.reserveCapacity(2 * pairs.count)
        for (words, first) in pairs {
            guard words.leafWords == 2 * half, words.stride == stride, first >= 0, first + rows <= words.count else {
                throw PIRError.invalidQuery("first-dimension selectors must be \(rows) ciphertexts per query")
            }
            let leaf = UnsafePointer(words.leaf(first))
            bases.append(leaf)
            bases.append(leaf + half)
        }
        self.owners = pairs.map(\.words)
        self.bases = bases
        self.rowStride = stride
        self.rows = rows
        self.half = half
    }
}
