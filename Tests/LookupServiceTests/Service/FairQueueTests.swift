import Foundation
import LookupEngine
import PIR
import Testing

/// The order a `FairQueue` serves in: the owners served least lately first, a phone's two requests together, and an
/// owner's own jobs in order.
@Suite("Fair queue order")
struct FairQueueTests {
    /// `owners` flooding owners with `each` queued, after `served` of their turns were served (as a flood's are
    /// within a moment of its start).
    static func flooded(owners: Int, each: Int, served: Int = 8) -> FairQueue<String> {
        var queue = FairQueue<String>()
        for i in 0..<(each + served) {
            for o in 0..<owners { queue.append("flood\(o)-\(i)", owner: "flood\(o)") }
        }
        for _ in 0..<(owners * served) { _ = queue.popFirst() }
        return queue
    }

    /// Every element left, in the order served.
    static func drain(_ queue: inout FairQueue<String>) -> [String] {
        var served: [String] = []
        while let next = queue.popFirst() { served.append(next) }
        return served
    }

    @Test("A phone's lookup (two requests) behind 8 flooding owners is served first, both requests together")
    func phoneAheadOfBacklog() {
        var queue = Self.flooded(owners: 8, each: 10)
        #expect(queue.ahead(of: "phone") == 0, "an owner not served lately goes ahead of the flood's turns")
        queue.append("phone-block", owner: "phone")
        #expect(queue.continuesPair(of: "phone"))
        queue.append("phone-identity", owner: "phone")
        let queued = queue.count
        let served = Self.drain(&queue)
        #expect(Array(served.prefix(2)) == ["phone-block", "phone-identity"], "served \(served.prefix(6))")
        #expect(served.count == queued, "nothing lost")
    }

    @Test("A group holds two turns in all: an owner that keeps one turn queued, another added as each is served, goes behind an owner waiting after its pair")
    func groupDoesNotRefill() {
        var queue = FairQueue<String>()
        queue.append("flood-0", owner: "flood")
        queue.append("flood-1", owner: "flood")
        queue.append("other-0", owner: "other")
        var served: [String] = []
        for i in 2..<8 {
            if let next = queue.popFirst() { served.append(next) }
            queue.append("flood-\(i)", owner: "flood")
        }
        served += Self.drain(&queue)
        #expect(Array(served.prefix(3)) == ["flood-0", "flood-1", "other-0"], "served \(served)")
        #expect(served.filter { $0.hasPrefix("flood") } == (0..<8).map { "flood-\($0)" }, "an owner's requests keep their order")
    }

    @Test("Owners wanting more than the capacity share it by turns, two at a time, whoever queued more")
    func backloggedShareByTurns() {
        var queue = FairQueue<String>()
        for i in 0..<30 { queue.append("big-\(i)", owner: "big") }
        for i in 0..<6 { queue.append("small-\(i)", owner: "small") }
        let served = Self.drain(&queue)
        let firstTwelve = served.prefix(12)
        #expect(firstTwelve.filter { $0.hasPrefix("small") }.count == 6, "the owner that queued less shared every round: \(firstTwelve)")
        #expect(served.filter { $0.hasPrefix("big") } == (0..<30).map { "big-\($0)" }, "an owner's requests keep their order")
    }

    @Test("Turns served while others waited weigh on an owner's next beyond one lookup's two: an owner served more than that goes after owners served less, with nothing queued")
    func usageWeighs() {
        var queue = FairQueue<String>()
        for i in 0..<4 { queue.append("flood-\(i)", owner: "flood") }
        queue.append("other-0", owner: "other")
        var served = Self.drain(&queue)
        #expect(served == ["flood-0", "flood-1", "other-0", "flood-2", "flood-3"], "two turns together, then the next owner's")
        // The flood took two turns while the other waited (its last two, alone, are not counted), the other one: both
        // within a lookup's two, so arrival order.
        queue.append("flood-4", owner: "flood")
        queue.append("other-1", owner: "other")
        queue.append("phone", owner: "phone")
        served = Self.drain(&queue)
        #expect(served == ["flood-4", "other-1", "phone"])
        // Now the flood took three turns while others waited, one beyond a lookup's; the other two.
        queue.append("flood-5", owner: "flood")
        queue.append("other-2", owner: "other")
        #expect(queue.ahead(of: "newcomer") == 1, "behind the other, ahead of the flood")
        queue.append("newcomer", owner: "newcomer")
        served = Self.drain(&queue)
        #expect(served == ["other-2", "newcomer", "flood-5"])
    }

    @Test("A phone that called a moment ago keeps its place in a crowd: fresh phones arriving after it do not go ahead of its one lookup and push it out of the queue; a second lookup does put it behind them")
    func repeatCallerKeepsPlace() {
        var queue = FairQueue<String>()
        for phone in ["phone", "a"] {
            for request in ["block", "identity"] { queue.append("\(phone)-\(request)", owner: phone) }
        }
        #expect(queue.popFirst() == "phone-block")
        #expect(queue.popFirst() == "phone-identity")
        // The phone calls again, then fresh phones arrive.
        for phone in ["phone", "b", "c"] {
            for request in ["block", "identity"] { queue.append("\(phone)-\(request)-2", owner: phone) }
        }
        var served = Self.drain(&queue)
        #expect(served == ["a-block", "a-identity", "phone-block-2", "phone-identity-2", "b-block-2", "b-identity-2", "c-block-2", "c-identity-2"],
                "\(served)")
        // Two lookups served while others waited are more than a phone's one: its third goes behind the fresh phones.
        for phone in ["phone", "d"] {
            for request in ["block", "identity"] { queue.append("\(phone)-\(request)-3", owner: phone) }
        }
        served = Self.drain(&queue)
        #expect(served == ["d-block-3", "d-identity-3", "phone-block-3", "phone-identity-3"], "\(served)")
    }

    @Test("Usage fades as other owners are served: a phone's lookup is forgotten by its next call; a turn taken alone costs nothing")
    func usageFades() {
        var queue = FairQueue<String>()
        for i in 0..<6 { queue.append("phone-\(i)", owner: "phone") }
        for i in 0..<4 { queue.append("other-0-\(i)", owner: "other-0") }
        let served = Self.drain(&queue)
        #expect(served == ["phone-0", "phone-1", "other-0-0", "other-0-1", "phone-2", "phone-3", "other-0-2", "other-0-3", "phone-4", "phone-5"])
        queue.append("other-1", owner: "other-1")
        #expect(queue.ahead(of: "phone") == 1, "just served four turns while others waited, the phone goes behind a newcomer")
        _ = queue.popFirst()
        // Four half-lives of other owners' turns, each taken while others waited.
        let crowd = Int(4 * FairQueue<String>.halfLife)
        for i in 0...crowd { queue.append("crowd-\(i)", owner: "crowd-\(i)") }
        for _ in 0..<crowd { _ = queue.popFirst() }
        _ = queue.popFirst()
        queue.append("other-2", owner: "other-2")
        queue.append("phone", owner: "phone")
        queue.append("other-3", owner: "other-3")
        #expect(queue.popFirst() == "other-2", "arrival order among owners served less than a turn lately")
        #expect(queue.popFirst() == "phone")
        #expect(queue.popFirst() == "other-3")
        // Alone, an owner's turns cost nothing: a phone that had the service to itself is not held back for it.
        for i in 0..<10 { queue.append("solo-\(i)", owner: "solo") }
        while queue.popFirst() != nil {}
        queue.append("other-4", owner: "other-4")
        #expect(queue.ahead(of: "solo") == 1)
        queue.append("solo-10", owner: "solo")
        queue.append("other-5", owner: "other-5")
        #expect(queue.ahead(of: "late") == 3)
        #expect(queue.popFirst() == "other-4")
        #expect(queue.popFirst() == "solo-10")
    }

    @Test("A population of phones leaves no records behind: one served alone none, a crowd only those served lately")
    func recordsBounded() {
        var queue = FairQueue<Int>()
        for i in 0..<10_000 {
            queue.append(i, owner: "alone-\(i)")
            _ = queue.popFirst()
        }
        #expect(queue.ownersKept == 0)
        for i in 0..<10_000 {  // two at a time: each served while the other waits
            queue.append(i, owner: "crowd-\(i)")
            if i % 2 == 1 { _ = queue.popFirst(); _ = queue.popFirst() }
        }
        #expect(queue.ownersKept <= 4 * Int(FairQueue<Int>.halfLife), "\(queue.ownersKept) records kept")
    }

    @Test("A crowd of phones: each one's two requests are served together, in arrival order, and a newcomer's estimate counts both of each phone ahead")
    func freshPairsTogether() {
        var queue = FairQueue<String>()
        for p in 0..<10 {
            queue.append("p\(p)-block", owner: "p\(p)")
            queue.append("p\(p)-identity", owner: "p\(p)")
        }
        #expect(queue.ahead(of: "late") == 20)
        let served = Self.drain(&queue)
        #expect(served == (0..<10).flatMap { ["p\($0)-block", "p\($0)-identity"] }, "\(served)")
    }

    @Test("A request that stops waiting gives up its owner's last turn; the others keep their order")
    func removeGivesUpTurn() {
        var queue = Self.flooded(owners: 2, each: 5)
        queue.append("phone-0", owner: "phone")
        queue.append("phone-1", owner: "phone")
        #expect(queue.remove(owner: "phone") { $0 == "phone-0" })
        #expect(!queue.remove(owner: "phone") { $0 == "phone-0" })
        #expect(queue.popFirst() == "phone-1")
        #expect(!queue.has("phone"))
        #expect(queue.count == 10)
    }

    @Test("Random appends, removals and pushed-out turns: nothing lost or doubled, each owner's order kept")
    func randomOperationsKeepOrder() {
        let seed = ProcessInfo.processInfo.environment["CALLVEIL_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("FairQueueTests.randomOperationsKeepOrder: seed \(seed) (CALLVEIL_SEED=\(seed) replays it)")
        var rng = SplitMix64(seed: seed)
        var queue = FairQueue<Int>()
        var waiting: [String: [Int]] = [:]
        var next = 0
        for _ in 0..<5_000 {
            let owner = "o\(Int.random(in: 0..<12, using: &rng))"
            switch Int.random(in: 0..<9, using: &rng) {
            case 0..<4:
                queue.append(next, owner: owner)
                waiting[owner, default: []].append(next)
                next += 1
            case 4..<7:
                guard let element = queue.popFirst() else { continue }
                let holder = waiting.first { $0.value.first == element }
                #expect(holder != nil, "popped \(element), not the oldest of any owner (seed \(seed))")
                if let holder { waiting[holder.key]?.removeFirst() }
            case 7:
                guard let mine = waiting[owner], !mine.isEmpty else { continue }
                let victim = mine[Int.random(in: 0..<mine.count, using: &rng)]
                #expect(queue.remove(owner: owner) { $0 == victim })
                waiting[owner]?.removeAll { $0 == victim }
            default:
                if let pushed = queue.pushOut(for: owner) {
                    let holder = waiting.first { $0.value.last == pushed }
                    #expect(holder != nil && holder?.key != owner, "pushed out \(pushed), not another owner's newest (seed \(seed))")
                    if let holder { waiting[holder.key]?.removeLast() }
                }
            }
            #expect(queue.count == waiting.values.reduce(0) { $0 + $1.count }, "count (seed \(seed))")
            #expect(queue.ahead(of: owner) <= queue.count)
        }
        while let element = queue.popFirst() {
            let holder = waiting.first { $0.value.first == element }
            #expect(holder != nil, "drained \(element) out of order (seed \(seed))")
            if let holder { waiting[holder.key]?.removeFirst() }
        }
        let left = waiting.values.reduce(0) { $0 + $1.count }
        #expect(left == 0, "left behind (seed \(seed))")
    }
}
