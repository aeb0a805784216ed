import ClusterTransport
import PIR
import Synchronization

/// Fault injection for tests and drills: drops a fraction of control messages (everything but queries, replies
/// and key fetches) on the link it is attached to, chosen by a seeded generator so a failing run can be replayed.
/// It can also show every message that passes to an observer (the fuzz seed recorder taps a live cluster so).
public final class LinkFaults: Sendable {
    /// Fraction of control messages dropped.
    public let dropRate: Double
    /// The seed the choices come from.
    public let seed: UInt64
    private let rng: Mutex<SplitMix64>
    private let counts = Mutex((dropped: 0, passed: 0))
    private let observe: (@Sendable (ClusterMessage) -> Void)?
    private let only: (@Sendable (ClusterMessage) -> Bool)?

    /// Drops `dropRate` of control messages (of those `only` holds for, when given), choosing with a generator
    /// seeded with `seed`; `observe` sees every message sent or received on the link before the choice.
    public init(dropRate: Double, seed: UInt64, only: (@Sendable (ClusterMessage) -> Bool)? = nil,
                observe: (@Sendable (ClusterMessage) -> Void)? = nil) {
        self.dropRate = min(max(dropRate, 0), 1)
        self.seed = seed
        self.only = only
        self.observe = observe
        rng = Mutex(SplitMix64(seed: seed))
    }

    /// Whether to drop `message`.
    public func drops(_ message: ClusterMessage) -> Bool {
        observe?(message)
        if let only, !only(message) { return false }
        switch message.body {
        case .query?, .reply?, .keyRequest?, .keyReply?, nil: return false
        default:
            let draw = rng.withLock { Double($0.next() >> 11) / Double(1 << 53) }
            let drop = draw < dropRate
            counts.withLock { drop ? ($0.dropped += 1) : ($0.passed += 1) }
            return drop
        }
    }

    /// Control messages dropped and passed so far.
    public var tally: (dropped: Int, passed: Int) { counts.withLock { $0 } }
}
