import BFV

/// The parsed-key cache's contents: a dictionary from key to slot and a doubly linked list of the slots in order of
/// use (head most recent), so that a use, an insertion and the eviction of the least recently used key are each a
/// few pointer updates rather than a search of every entry. Freed slots are reused.
struct EvaluationKeyCacheState {
    typealias Key = EvaluationKeyCache.Key

    /// One cached key and its neighbours in the order of use.
    struct Node {
        let key: Key
        let value: EvaluationKey
        let bytes: Int
        /// When the key was uploaded (seconds since 1970; 0 unknown), for expiry.
        let uploadedAt: Double
        var previous: Int
        var next: Int
    }

    /// The end of the list.
    static let none = -1

    private(set) var slots: [Key: Int] = [:]
    /// Each owner's cached timestamps (usually one), so that invalidating a re-uploaded config visits only its keys.
    private(set) var owners: [EvaluationKeyCache.Owner: [UInt64]] = [:]
    private var storage: [Node?] = []
    private var free: [Int] = []
    private(set) var head = Self.none
    private(set) var tail = Self.none
    private(set) var bytes = 0

    /// The node in a used slot.
    func node(_ slot: Int) -> Node { storage[slot]! }

    /// Adds a key that is not cached as the most recently used.
    mutating func insertAtFront(_ key: Key, _ value: EvaluationKey, bytes: Int, uploadedAt: Double) {
        let node = Node(key: key, value: value, bytes: bytes, uploadedAt: uploadedAt, previous: Self.none, next: head)
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
            storage[slot] = node
        } else {
            slot = storage.count
            storage.append(node)
        }
        if head != Self.none { storage[head]!.previous = slot }
        head = slot
        if tail == Self.none { tail = slot }
        slots[key] = slot
        owners[key.owner, default: []].append(key.timestamp)
        self.bytes += bytes
    }

    /// Marks a cached key as the most recently used.
    mutating func moveToFront(_ slot: Int) {
        guard slot != head else { return }
        unlink(slot)
        storage[slot]!.previous = Self.none
        storage[slot]!.next = head
        storage[head]!.previous = slot  // the slot was not the head, so the list keeps one
        head = slot
    }

    /// Drops the key in `slot` and returns its value, for the caller to release outside the lock.
    mutating func remove(_ slot: Int) -> EvaluationKey {
        unlink(slot)
        let node = storage[slot]!
        storage[slot] = nil
        free.append(slot)
        slots.removeValue(forKey: node.key)
        let owner = node.key.owner
        if var timestamps = owners[owner] {
            timestamps.removeAll { $0 == node.key.timestamp }
            owners[owner] = timestamps.isEmpty ? nil : timestamps
        }
        bytes -= node.bytes
        return node.value
    }

    /// Takes `slot` out of the order of use, joining its neighbours.
    private mutating func unlink(_ slot: Int) {
        let node = storage[slot]!
        if node.previous != Self.none { storage[node.previous]!.next = node.next } else { head = node.next }
        if node.next != Self.none { storage[node.next]!.previous = node.previous } else { tail = node.previous }
    }
}
