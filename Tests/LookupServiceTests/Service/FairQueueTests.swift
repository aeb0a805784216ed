import LookupEngine
import Testing

/// The order a `FairQueue` serves in: round-robin across backlogged owners, and an owner that had nothing queued (a
/// phone asking now and then) ahead of them, every other turn.
@Suite("Fair queue order")
struct FairQueueTests {
    /// `owners` flooding owners with about `each` queued, their fresh turns used up (as a flood's are within a
    /// moment of its start).
    static func flooded(owners: Int, each: Int) -> FairQueue<String> {
        var queue = FairQueue<String>()
        let drain = 4 * FairQueue<String>.freshTurns
        for i in 0..<(each + drain) {
            for o in 0..<owners { queue.append("flood\(o)-\(i)", owner: "flood\(o)") }
        }
        for _ in 0..<(owners * drain) { _ = queue.popFirst() }
        return queue
    }

    @Test("A phone's lookup (two requests) behind 8 flooding owners is served within the next four turns, not after a round of each")
    func phoneAheadOfBacklog() {
        var queue = Self.flooded(owners: 8, each: 10)
        #expect(queue.ahead(of: "phone") <= 2, "a fresh owner's estimate counts the fresh ahead of it, not a round")
        queue.append("phone-block", owner: "phone")
        queue.append("phone-identity", owner: "phone")
        let queued = queue.count
        var served: [String] = []
        while let next = queue.popFirst() { served.append(next) }
        let block = served.firstIndex(of: "phone-block")!, identity = served.firstIndex(of: "phone-identity")!
        #expect(block <= 1 && identity <= 3, "served \(served.prefix(6))")
        #expect(served.count == queued, "nothing lost")
    }

    @Test("Fresh owners never take more than every other turn from backlogged ones; a fresh owner's third request waits in the rotation")
    func backlogNotStarved() {
        var queue = Self.flooded(owners: 1, each: 40)
        for i in 0..<30 { queue.append("new\(i)", owner: "new\(i)") }   // 30 one-shot owners (new identities)
        for i in 0..<3 { queue.append("phone-\(i)", owner: "phone") }
        var served: [String] = []
        while let next = queue.popFirst() { served.append(next) }
        let firstSixty = served.prefix(60)
        #expect(firstSixty.filter { $0.hasPrefix("flood") }.count >= 29, "the backlogged owner kept every other turn: \(firstSixty)")
        let phone = (0..<3).map { served.firstIndex(of: "phone-\($0)")! }
        #expect(phone[0] < phone[1] && phone[1] < phone[2], "an owner's requests keep their order")
        #expect(phone[2] > 60, "the third request went to the rotation, behind the fresh owners' turns")
    }

    @Test("A crowd of phones: each one's two requests are served together, not after a round of every other phone's, and a newcomer's estimate counts both of each phone ahead")
    func freshPairsTogether() {
        var queue = FairQueue<String>()
        for p in 0..<10 {
            queue.append("p\(p)-block", owner: "p\(p)")
            queue.append("p\(p)-identity", owner: "p\(p)")
        }
        #expect(queue.ahead(of: "late") == 20)
        var served: [String] = []
        while let next = queue.popFirst() { served.append(next) }
        #expect(served == (0..<10).flatMap { ["p\($0)-block", "p\($0)-identity"] }, "\(served)")
    }

    @Test("A request that stops waiting leaves no trace: its owner, emptied, is fresh again next time")
    func removeClearsFresh() {
        var queue = Self.flooded(owners: 2, each: 5)
        queue.append("phone-0", owner: "phone")
        #expect(queue.remove(owner: "phone") { $0 == "phone-0" })
        #expect(!queue.has("phone"))
        queue.append("phone-1", owner: "phone")
        #expect(queue.popFirst() == "phone-1" || queue.popFirst() == "phone-1")
    }
}
