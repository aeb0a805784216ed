@testable import BFV
import Testing

/// `Context.shared`: one context per parameter set while anyone holds it, and none kept once nobody does; inside a
/// context, the contexts of fewer moduli share the full one's NTT tables.
@Suite("Shared contexts")
struct SharedContextTests {
    /// Where a modulus's forward NTT table lives: equal for two contexts that share it.
    static func tables(_ table: NTTTables?) -> UnsafeRawPointer? {
        table?.forward.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }

    @Test("equal parameters share one context, other parameters get their own, and an unheld one is freed")
    func sharing() throws {
        let five = EncryptionParameters(.n_4096_logq_27_28_28_logt_5)
        let four = EncryptionParameters(.n_4096_logq_27_28_28_logt_4)
        let a = try Context.shared(parameters: five)
        let b = try Context.shared(parameters: five)
        #expect(a === b)
        let c = try Context.shared(parameters: four)
        #expect(c !== a)
        #expect(c.parameters == four)

        weak var released: Context?
        do {
            let held = try Context.shared(parameters: EncryptionParameters(.n_4096_logq_16_33_33_logt_4))
            released = held
            #expect(released != nil)
        }
        #expect(released == nil)
    }

    @Test("a prefix context uses the full context's NTT tables for its moduli, not copies")
    func prefixSharesTables() throws {
        let context = try Context(parameters: EncryptionParameters(.n_4096_logq_27_28_28_logt_5))
        let key = context.keyContext
        for (k, prefix) in context.prefixContexts.enumerated() {
            #expect(prefix.rowCount == k + 1)
            #expect(prefix.moduli == Array(key.moduli.prefix(k + 1)))
            for i in 0...k {
                #expect(Self.tables(prefix.ntt[i]) != nil)
                #expect(Self.tables(prefix.ntt[i]) == Self.tables(key.ntt[i]), "prefix \(k + 1), modulus \(i)")
            }
        }
    }

    @Test("the levels' auxiliary bases share the NTT tables of the primes they have in common")
    func auxiliaryBasesShareTables() throws {
        let context = try Context(parameters: EncryptionParameters(.n_4096_logq_27_28_28_logt_5))
        let bases = context.levels.map(\.multiplication.auxContext)
        var shared = 0
        for (a, lower) in bases.enumerated() {
            for upper in bases.dropFirst(a + 1) {
                for (i, prime) in lower.moduliValues.enumerated() {
                    guard let j = upper.moduliValues.firstIndex(of: prime) else { continue }
                    #expect(Self.tables(lower.ntt[i]) != nil)
                    #expect(Self.tables(lower.ntt[i]) == Self.tables(upper.ntt[j]), "prime \(prime)")
                    shared += 1
                }
            }
        }
        // At these parameters both levels need three 30-bit primes, the same ones.
        #expect(shared > 0, "auxiliary bases \(bases.map(\.moduliValues))")
    }
}
