import DequeModule

/// A queue served round-robin across owners (one User-Identifier's jobs do not wait behind another's backlog):
/// each owner's jobs keep their order, and the owner served last goes to the back of the rotation. When the queue
/// is full, a newcomer can push out the newest job of the owner holding the most, if that owner holds more than
/// the newcomer would.
package struct FairQueue<Element> {
    private var queues: [String: Deque<Element>] = [:]
    private var rotation: Deque<String> = []
    /// Elements queued across owners.
    package private(set) var count = 0

    /// An empty queue.
    package init() {}

    /// Queues `element` behind its owner's earlier elements.
    package mutating func append(_ element: Element, owner: String) {
        if queues[owner, default: []].isEmpty { rotation.append(owner) }
        queues[owner, default: []].append(element)
        count += 1
    }

    /// The next owner's oldest element; that owner goes to the back of the rotation if it has more.
    package mutating func popFirst() -> Element? {
        guard let owner = rotation.popFirst(), var queue = queues.removeValue(forKey: owner), let element = queue.popFirst() else {
            return nil
        }
        if !queue.isEmpty {
            queues[owner] = queue
            rotation.append(owner)
        }
        count -= 1
        return element
    }

    /// Whether `owner` has an element queued.
    package func has(_ owner: String) -> Bool { queues[owner] != nil }

    /// How many queued elements would be served before one `owner` appends now: its own, and from every other
    /// owner at most one more than `owner` has queued (the rotation serves owners in turn).
    package func ahead(of owner: String) -> Int {
        let mine = queues[owner]?.count ?? 0
        return queues.reduce(0) { sum, entry in sum + (entry.key == owner ? entry.value.count : min(entry.value.count, mine + 1)) }
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
        } else {
            queues[owner] = queue
        }
        return true
    }
}
