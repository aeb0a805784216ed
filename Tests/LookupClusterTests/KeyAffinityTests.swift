import LookupCoordinator
import Testing

/// Rendezvous hashing spreads phones evenly over a shard's replicas and moves only a leaving worker's phones.
@Suite("Key affinity")
struct KeyAffinityTests {
    @Test("3,000 phones over three replicas: each gets its share; without one of them only its phones move")
    func spreadAndStability() {
        let owners = (0..<3000).map { "phone-\($0)" }
        let three = ["w1", "w2", "w3"]
        let before = owners.map { KeyAffinity.replica(for: $0, among: three)! }
        for worker in three {
            let share = before.filter { $0 == worker }.count
            #expect(share > 850 && share < 1150, "\(worker) got \(share) of 3,000")
        }
        let after = owners.map { KeyAffinity.replica(for: $0, among: ["w1", "w2"])! }
        for (old, new) in zip(before, after) where old != "w3" { #expect(old == new) }
        #expect(KeyAffinity.replica(for: "", among: three) == nil)
        #expect(KeyAffinity.replica(for: "phone-1", among: [String]()) == nil)
        // The order the holders are listed in does not matter.
        #expect(owners.prefix(100).allSatisfy { KeyAffinity.replica(for: $0, among: three) == KeyAffinity.replica(for: $0, among: three.reversed()) })
    }
}
