import BFV
import Dispatch

/// Oblivious query expansion (SPEC-PIR §5.2): turns each query ciphertext into up to N ciphertexts, output k
/// encrypting selector slot k (times `2^height`, which the client's scaling cancels).
public struct QueryExpansion: Sendable {
    /// The BFV context.
    public let context: Context
    /// The user's evaluation key (Galois keys for `2^k + 1`, possibly compressed).
    public let evaluationKey: EvaluationKey
    /// Available Galois elements, ascending.
    private let elements: [Int]

    /// Threads the expansion tree may use (its two halves are independent at every level).
    public let threads: Int

    /// Prepares expansion with a user's key.
    public init(context: Context, evaluationKey: EvaluationKey, threads: Int = 1) {
        self.context = context
        self.evaluationKey = evaluationKey
        self.elements = evaluationKey.galoisKeys.keys.sorted()
        self.threads = max(threads, 1)
    }

    /// The element applied at level `level`, and how often: the largest available `g ≤ target`, applied
    /// `2^(log2(target−1) − log2(g−1))` times.
    func plan(level: Int) throws -> (element: Int, repetitions: Int) {
        let logN = context.degree.trailingZeroBitCount
        let target = (1 << (logN - level + 1)) + 1
        guard let g = elements.last(where: { $0 <= target }), g > 2 else {
            throw PIRError.missingEvaluationKey("no Galois element ≤ \(target) for expansion level \(level)")
        }
        let shift = (Int.bitWidth - 1 - (target - 1).leadingZeroBitCount) - (Int.bitWidth - 1 - (g - 1).leadingZeroBitCount)
        guard shift >= 0, (g - 1) & (g - 2) == 0 else {
            throw PIRError.missingEvaluationKey("Galois element \(g) is not of the form 2^k + 1")
        }
        return (g, 1 << shift)
    }

    /// Expands one query ciphertext (coefficient form) into `count` outputs (1 ≤ count ≤ N).
    public func expand(_ ciphertext: Ciphertext, count: Int) throws -> [Ciphertext] {
        guard count >= 1, count <= context.degree else { throw PIRError.invalidQuery("expansion to \(count) outputs") }
        if let kernel = context.narrowKeySwitch, let leaves = try expandWords(ciphertext, count: count) {
            return try leaves.map { try kernel.ciphertext(words: $0, format: .coeff, context: context) }
        }
        return try expand(ciphertext.converted(to: .coeff), count: count, level: 1, height: ceilLog2(count),
                          threads: threads)
    }

    /// Expands one query ciphertext into `count` outputs as 32-bit words (2 polynomials × rows × N each, see
    /// `NarrowKeySwitch`), or nil when the parameters have no 32-bit kernel. With `evaluationForm` the tree runs
    /// in evaluation form from the root (one transform of the query) and the outputs come out transformed, as
    /// the database pass reads them: the leaves' own transforms are saved. Both forms give the same outputs.
    public func expandWords(_ ciphertext: Ciphertext, count: Int, evaluationForm: Bool = false) throws -> [[UInt32]]? {
        guard let kernel = context.narrowKeySwitch else { return nil }
        let output = try SelectorWords(count: count, leafWords: kernel.ciphertextWords)
        guard try expandWords(ciphertext, count: count, evaluationForm: evaluationForm, into: output, firstLeaf: 0)
        else { return nil }
        return (0..<count).map { output.words($0) }
    }

    /// Expands one query ciphertext into leaves `firstLeaf ..< firstLeaf + count` of `output`, each written once
    /// (as `expandWords(_:count:evaluationForm:)` returns them); false when the parameters have no 32-bit kernel.
    func expandWords(_ ciphertext: Ciphertext, count: Int, evaluationForm: Bool, into output: SelectorWords,
                     firstLeaf: Int) throws -> Bool {
        guard count >= 1, count <= context.degree else { throw PIRError.invalidQuery("expansion to \(count) outputs") }
        guard let kernel = context.narrowKeySwitch, ciphertext.polys.count == 2,
              ciphertext.moduliCount == kernel.rows else { return false }
        guard output.leafWords == kernel.ciphertextWords, firstLeaf >= 0, firstLeaf + count <= output.count else {
            throw PIRError.invalidQuery("expansion outputs do not fit their buffer")
        }
        let c = ciphertext.converted(to: .coeff)
        let n = context.degree
        let rows = kernel.rows
        var root = [UInt32](repeating: 0, count: kernel.ciphertextWords)
        for (poly, p) in c.polys.enumerated() {
            for i in 0..<(rows * n) { root[poly * rows * n + i] = UInt32(truncatingIfNeeded: p.data[i]) }
        }
        let evaluation = evaluationForm && kernel.evaluationFormExpansion
        if evaluation {
            root.withUnsafeMutableBufferPointer { if let base = $0.baseAddress { kernel.forwardNTT(base) } }
        }
        try expandNarrow(consume root, count: count, level: 1, height: ceilLog2(count), threads: threads,
                         kernel: kernel, scratch: kernel.makeScratch(), evaluation: evaluation,
                         output: output, slot: firstLeaf, slotStride: 1)
        if evaluationForm, !evaluation {
            // No evaluation-form permutations for these moduli: transform the coefficient-form leaves.
            for k in firstLeaf..<(firstLeaf + count) { kernel.forwardNTT(output.leaf(k)) }
        }
        return true
    }

    /// The subtree under `c` (which it takes over and reuses as its even half: a split writes into the buffers
    /// the key switch has just touched, and allocates only its odd half). Its `count` outputs go to the leaves
    /// `slot`, `slot + slotStride`, … of `output`: the even subtree's at even positions, the odd one's at odd
    /// positions (the even subtree has the extra one when the count is odd).
    private func expandNarrow(_ c: consuming [UInt32], count: Int, level: Int, height: Int, threads: Int,
                              kernel: NarrowKeySwitch, scratch: NarrowKeySwitch.Scratch, evaluation: Bool,
                              output: SelectorWords, slot: Int, slotStride: Int) throws {
        var even = c
        if count == 1 {
            let leaf = output.leaf(slot)
            even.withUnsafeBufferPointer { w in
                guard let src = w.baseAddress else { return }
                guard level <= height else {
                    leaf.update(from: src, count: output.leafWords)
                    return
                }
                // The last level's doubling: c + c (the same in either form).
                let n = context.degree
                for poly in 0..<2 {
                    for (r, q) in kernel.moduli.enumerated() {
                        let base = (poly * kernel.rows + r) * n
                        for i in base..<(base + n) {
                            let s = src[i] &+ src[i]
                            leaf[i] = s >= q ? s &- q : s
                        }
                    }
                }
            }
            return
        }
        if count == 2, level >= height {
            // The last split: both halves are leaves as they are, written straight into the output.
            let rotated = try rotateNarrow(even, level: level, kernel: kernel, scratch: scratch, evaluation: evaluation)
            try combineNarrow(even: output.leaf(slot), odd: output.leaf(slot + slotStride), c: even, r: rotated,
                              level: level, kernel: kernel, evaluation: evaluation)
            return
        }
        let second = count / 2
        let first = count - second
        var odd = try splitNarrow(&even, level: level, kernel: kernel, scratch: scratch, evaluation: evaluation)
        let counts = [first, second]
        let slots = [slot, slot + slotStride]
        if threads > 1, count >= 4 {
            let halves = [WordsBox(even), WordsBox(odd)]
            even = []
            odd = []
            let results = ResultSlots<Void>(count: 2)
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                results.set(i, Result {
                    try expandNarrow(halves[i].take(), count: counts[i], level: level + 1, height: height,
                                     threads: threads / 2, kernel: kernel, scratch: kernel.makeScratch(),
                                     evaluation: evaluation, output: output, slot: slots[i], slotStride: 2 * slotStride)
                })
            }
            _ = try results.values()
        } else {
            try expandNarrow(consume even, count: first, level: level + 1, height: height, threads: 1, kernel: kernel,
                             scratch: scratch, evaluation: evaluation, output: output, slot: slots[0],
                             slotStride: 2 * slotStride)
            try expandNarrow(consume odd, count: second, level: level + 1, height: height, threads: 1, kernel: kernel,
                             scratch: scratch, evaluation: evaluation, output: output, slot: slots[1],
                             slotStride: 2 * slotStride)
        }
    }

    /// Splits `c` into its even half (in place) and its odd half (returned).
    private func splitNarrow(_ c: inout [UInt32], level: Int, kernel: NarrowKeySwitch,
                             scratch: NarrowKeySwitch.Scratch, evaluation: Bool) throws -> [UInt32] {
        var rotated = try rotateNarrow(c, level: level, kernel: kernel, scratch: scratch, evaluation: evaluation)
        if evaluation {
            // In place: `c` becomes the even half and `rotated` the odd one.
            try c.withUnsafeMutableBufferPointer { cp in
                try rotated.withUnsafeMutableBufferPointer { rp in
                    guard let cb = cp.baseAddress, let rb = rp.baseAddress else { return }
                    try combineNarrow(even: cb, odd: rb, c: cb, r: rb, level: level, kernel: kernel, evaluation: true)
                }
            }
            return rotated
        }
        var even = Self.uninitializedWords(kernel.ciphertextWords)
        var odd = Self.uninitializedWords(kernel.ciphertextWords)
        try even.withUnsafeMutableBufferPointer { ep in
            try odd.withUnsafeMutableBufferPointer { op in
                guard let eb = ep.baseAddress, let ob = op.baseAddress else { return }
                try combineNarrow(even: eb, odd: ob, c: c, r: rotated, level: level, kernel: kernel, evaluation: false)
            }
        }
        c = even
        return odd
    }

    /// σ(c) key-switched for level `level` (repeated when the key holds only a smaller element).
    private func rotateNarrow(_ c: [UInt32], level: Int, kernel: NarrowKeySwitch, scratch: NarrowKeySwitch.Scratch,
                              evaluation: Bool) throws -> [UInt32] {
        let (g, repetitions) = try plan(level: level)
        guard let key = evaluationKey.galoisKeys[g] else { throw PIRError.missingEvaluationKey("Galois key \(g)") }
        func switchKey(_ source: [UInt32], into target: inout [UInt32]) throws {
            try source.withUnsafeBufferPointer { src in
                try target.withUnsafeMutableBufferPointer { dst in
                    guard let s = src.baseAddress, let d = dst.baseAddress else { return }
                    if evaluation {
                        try kernel.applyGaloisEvaluation(d, s, element: g, key: key, scratch: scratch)
                    } else {
                        try kernel.applyGalois(d, s, element: g, key: key, scratch: scratch)
                    }
                }
            }
        }
        var rotated = Self.uninitializedWords(kernel.ciphertextWords)
        try switchKey(c, into: &rotated)
        if repetitions > 1 {
            var spare = Self.uninitializedWords(kernel.ciphertextWords)
            for _ in 1..<repetitions {
                try switchKey(rotated, into: &spare)
                swap(&rotated, &spare)
            }
        }
        return rotated
    }

    /// A split's halves from `c` and its rotation `r`: `even = c + r`, `odd = (c − r)·x^{−2^(level−1)}`; in
    /// evaluation form `even` may be `c` and `odd` may be `r`.
    private func combineNarrow(even: UnsafeMutablePointer<UInt32>, odd: UnsafeMutablePointer<UInt32>,
                               c: UnsafePointer<UInt32>, r: UnsafePointer<UInt32>, level: Int, kernel: NarrowKeySwitch,
                               evaluation: Bool) throws {
        let shift = 1 << (level - 1)
        if evaluation {
            try kernel.combineEvaluation(even: even, odd: odd, c: c, r: r, shift: shift)
        } else {
            kernel.combine(even: even, odd: odd, c: c, r: r, shift: shift)
        }
    }

    /// A buffer of `count` words, every one of which the kernels write before it is read.
    private static func uninitializedWords(_ count: Int) -> [UInt32] {
        [UInt32](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }

    private func expand(_ c: Ciphertext, count: Int, level: Int, height: Int, threads: Int) throws -> [Ciphertext] {
        if count == 1 {
            return level > height ? [c] : [try context.add(c, c)]
        }
        let second = count / 2
        let first = count - second
        let (p0, p1) = try split(c, level: level)
        let a: [Ciphertext]
        let b: [Ciphertext]
        if threads > 1, count >= 4 {
            // The halves are independent: expand them on two threads, splitting the remaining threads.
            let halves = [(p0, first), (p1, second)]
            let slots = ResultSlots<[Ciphertext]>(count: 2)
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                slots.set(i, Result {
                    try expand(halves[i].0, count: halves[i].1, level: level + 1, height: height, threads: threads / 2)
                })
            }
            let results = try slots.values()
            (a, b) = (results[0], results[1])
        } else {
            a = try expand(p0, count: first, level: level + 1, height: height, threads: 1)
            b = try expand(p1, count: second, level: level + 1, height: height, threads: 1)
        }
        return Self.interleave(a, b)
    }

    /// The outputs of a split in slot order: the even subtree's outputs at even slots, the odd one's at odd slots
    /// (the even subtree has the extra one when the count is odd).
    static func interleave<T>(_ even: [T], _ odd: [T]) -> [T] {
        var out: [T] = []
        out.reserveCapacity(even.count + odd.count)
        for i in 0..<odd.count {
            out.append(even[i])
            out.append(odd[i])
        }
        out.append(contentsOf: even[odd.count...])
        return out
    }

    private func split(_ c: Ciphertext, level: Int) throws -> (Ciphertext, Ciphertext) {
        let (g, repetitions) = try plan(level: level)
        var rotated = c
        for _ in 0..<repetitions { rotated = try context.applyGalois(rotated, element: g, key: evaluationKey) }
        let sum = try context.add(c, rotated)
        let difference = try context.subtract(c, rotated)
        let shifted = try context.multiply(difference, monomialPower: -(1 << (level - 1)))
        return (sum, shifted)
    }
}

/// One subtree's input handed to the thread that expands it, taken out so that thread holds the only reference
/// (and reuses the buffer in place instead of copying it).
private final class WordsBox: @unchecked Sendable {
    private var words: [UInt32]

    init(_ words: [UInt32]) { self.words = words }

    /// The words, leaving the box empty; called once, by the one thread the box is for.
    func take() -> [UInt32] {
        var out: [UInt32] = []
        swap(&out, &words)
        return out
    }
}
