import Foundation
import PIR

/// The random generator of randomized tests: SplitMix64 seeded from `CALLVEIL_SEED` when set, else from a fresh
/// random seed, which it prints with the test's name so a failing run can be replayed exactly.
public struct TestRandom: RandomNumberGenerator {
    /// The seed this generator started from.
    public let seed: UInt64
    private var generator: SplitMix64

    /// A generator for the calling test; prints its seed.
    public init(_ test: String = #function, file: String = #fileID) {
        let environment = ProcessInfo.processInfo.environment["CALLVEIL_SEED"].flatMap { UInt64($0) }
        seed = environment ?? UInt64.random(in: 1...UInt64.max)
        generator = SplitMix64(seed: seed)
        print("\(file) \(test): random seed \(seed) (CALLVEIL_SEED=\(seed) replays it)")
    }

    public mutating func next() -> UInt64 { generator.next() }
}
