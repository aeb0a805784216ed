import ClusterTransport

/// The queries waiting at the coordinator for a replica's credit, served fairly across owners (User-Identifiers),
/// so a flood from a few users cannot make one phone wait behind all of it. Each waiter gets a turn number one past
/// its owner's newest waiter or the turn last served, whichever is later (virtual-time fair queuing), and turns
/// are served in order, arrival breaking ties: owners take turns, each keeping its own order. When the line is full, a newcomer takes the place of the
/// newest waiter of the owner holding the most, if that owner holds at least two more than the newcomer's.
struct CreditLine {
    /// A query waiting in line.
    struct Waiter {
        let ticket: UInt64
        let owner: String
        /// Set when admitted.
        var turn = 0
        let shard: ShardKey
        let excluding: Set<String>
        let continuation: CheckedContinuation<ClusterCoordinator.Reservation?, Never>
    }

    /// Waiters in arrival order.
    private(set) var waiters: [Waiter] = []
    /// The latest turn served.
    private var served = 0

    var count: Int { waiters.count }

    /// Adds `waiter` if there is room or room can be made; returns whether it was admitted and the waiter pushed
    /// out to make room (to be refused).
    mutating func admit(_ waiter: Waiter, capacity: Int) -> (admitted: Bool, pushedOut: Waiter?) {
        guard waiters.count >= capacity else {
            append(waiter)
            return (true, nil)
        }
        let counts = Dictionary(waiters.map { ($0.owner, 1) }, uniquingKeysWith: +)
        let mine = counts[waiter.owner] ?? 0
        guard let (largest, most) = counts.max(by: { ($0.value, $0.key) < ($1.value, $1.key) }), most >= mine + 2,
              let index = waiters.lastIndex(where: { $0.owner == largest }) else {
            return (false, nil)
        }
        let pushed = waiters.remove(at: index)
        append(waiter)
        return (true, pushed)
    }

    private mutating func append(_ waiter: Waiter) {
        var waiter = waiter
        waiter.turn = max(served, waiters.filter { $0.owner == waiter.owner }.map(\.turn).max() ?? 0) + 1
        waiters.append(waiter)
    }

    /// Takes a waiter out of line; nil once it was served or refused.
    mutating func withdraw(_ ticket: UInt64) -> Waiter? {
        guard let index = waiters.firstIndex(where: { $0.ticket == ticket }) else { return nil }
        return waiters.remove(at: index)
    }

    /// Offers credit to the line in fair order: `reserve` is asked for each waiter's shard; waiters it answers
    /// `.busy` stay in line, the others are returned with their answer.
    mutating func serve(_ reserve: (Waiter) -> ClusterCoordinator.Reservation)
        -> [(Waiter, ClusterCoordinator.Reservation)] {
        guard !waiters.isEmpty else { return [] }
        let order = waiters.indices.sorted { (waiters[$0].turn, $0) < (waiters[$1].turn, $1) }
        var answered: [(Waiter, ClusterCoordinator.Reservation)] = []
        var leaving = Set<Int>()
        for index in order {
            let waiter = waiters[index]
            let choice = reserve(waiter)
            if case .busy = choice { continue }
            answered.append((waiter, choice))
            leaving.insert(index)
            served = max(served, waiter.turn)
        }
        if !leaving.isEmpty { waiters = waiters.indices.filter { !leaving.contains($0) }.map { waiters[$0] } }
        return answered
    }

    /// Empties the line (the coordinator is stopping).
    mutating func removeAll() -> [Waiter] {
        defer { waiters.removeAll() }
        return waiters
    }
}
