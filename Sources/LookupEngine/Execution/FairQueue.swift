import DequeModule

/// A queue served round-robin across owners (one User-Identifier's jobs do not wait behind another's backlog):
/// each owner's jobs keep their order, and the owner served last goes to the back of the rotation. An owner that
/// had nothing queued is *fresh*, as a new flow is in FQ-CoDel: its first `freshTurns` jobs are served before the
/// rotation's, alternating with it while the rotation has owners waiting, so a phone asking now and then waits for
/// about one job, not one job of every flooding owner, and backlogged owners still get at least every other turn.
/// Fresh owners are served in arrival order, each one's fresh turns together: a phone's lookup is two requests, and
/// the second is worth nothing without the first, so it does not wait for a round of every other phone's.
/// When the queue is full, a newcomer can push out the newest job of the owner holding the most, if that owner holds
/// more than the newcomer would.
package struct FairQueue<Element> {
    /// Jobs of a fresh owner served ahead of the rotation (a phone's lookup is two requests at once).
    package static var freshTurns: Int { 2 }

    private var queues: [String: Deque<Element>] = [:]
    private var rotation: Deque<String> = []
    /// Fresh owners in arrival order, with the turns they have left ahead of the rotation.
    private var fresh: Deque<String> = []
    private var freshLeft: [String: Int] = [:]
    /// Whether the last job served was a fresh owner's (the next goes to the rotation, if it has owners waiting).
    private var servedFresh = false
    /// Elements queued across owners.
    package private(set) var count = 0

    /// An empty queue.
    package init() {}

    /// Queues `element` behind its owner's earlier elements; an owner with nothing queued becomes fresh.
    package mutating func append(_ element: Element, owner: String) {
        if queues[owner, default: []].isEmpty {
            fresh.append(owner)
            freshLeft[owner] = Self.freshTurns
        }
        queues[owner, default: []].append(element)
        count += 1
    }

    /// The next job: the first fresh owner's oldest (every other turn while the rotation has owners waiting), else
    /// the rotation's next owner's oldest. A fresh owner with more queued stays first while it has fresh turns left,
    /// then goes to the back of the rotation.
    package mutating func popFirst() -> Element? {
        let takeFresh = !fresh.isEmpty && (rotation.isEmpty || !servedFresh)
        guard let owner = takeFresh ? fresh.first : rotation.popFirst(), var queue = queues.removeValue(forKey: owner),
              let element = queue.popFirst() else {
            return nil
        }
        servedFresh = takeFresh
        count -= 1
        if takeFresh {
            let left = freshLeft[owner, default: 1] - 1
            if queue.isEmpty || left == 0 {
                fresh.removeFirst()
                freshLeft.removeValue(forKey: owner)
                if !queue.isEmpty { rotation.append(owner) }
            } else {
                freshLeft[owner] = left
            }
        } else if !queue.isEmpty {
            rotation.append(owner)
        }
        if !queue.isEmpty { queues[owner] = queue }
        return element
    }

    /// Whether `owner` has an element queued.
    package func has(_ owner: String) -> Bool { queues[owner] != nil }

    /// Whether the element `owner` appends now would follow its queued ones among its fresh turns (the second request
    /// of a phone's lookup, while the first waits).
    package func continuesFreshTurns(of owner: String) -> Bool {
        let mine = queues[owner]?.count ?? 0
        return mine > 0 && (freshLeft[owner] ?? 0) > mine
    }

    /// How many queued elements would be served before one `owner` appends now, at most. An element that would be
    /// among its owner's fresh turns waits for the fresh turns ahead of it (every fresh owner's before it, and its
    /// own), each followed by at most one of the rotation's. Otherwise it waits in the rotation: for its own, and
    /// from every other owner at most one more than `owner` has queued.
    package func ahead(of owner: String) -> Int {
        let mine = queues[owner]?.count ?? 0
        let left = mine == 0 ? Self.freshTurns : (freshLeft[owner] ?? 0)
        guard left > mine else {
            return queues.reduce(0) { sum, entry in sum + (entry.key == owner ? entry.value.count : min(entry.value.count, mine + 1)) }
        }
        var freshAhead = mine
        for other in fresh {
            if other == owner { break }
            freshAhead += min(queues[other]?.count ?? 0, freshLeft[other] ?? 0)
        }
        return freshAhead + min(freshAhead + 1, count - freshAhead)
    }

    /// The newest element of the owner with the most queued, if it holds at least two more than `owner` does
    /// (taking one from it still leaves it more than `owner` will have).
    package mutating func pushOut(for owner: String) -> Element? {
        let mine = queues[owner]?.count ?? 0
        guard let (largest, queue) = queues.max(by: { $0.value.count < $1.value.count }), queue.count >= mine + 2,
              let element = queues[largest]?.popLast() else {
            return nil
        }
        count -= 1
        return element
    }

    /// Removes `owner`'s first element matching `match` (a request that stopped waiting); whether one was found.
    package mutating func remove(owner: String, where match: (Element) -> Bool) -> Bool {
        guard var queue = queues[owner], let index = queue.firstIndex(where: match) else { return false }
        queue.remove(at: index)
        count -= 1
        if queue.isEmpty {
            queues.removeValue(forKey: owner)
            rotation.removeAll { $0 == owner }
            fresh.removeAll { $0 == owner }
            freshLeft.removeValue(forKey: owner)
        } else {
            queues[owner] = queue
        }
        return true
    }
}
