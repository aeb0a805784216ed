import DequeModule
import Foundation

/// A queue served by how little each owner (one User-Identifier) has been served lately, so one owner's jobs do not
/// wait behind another's backlog, and an owner asking more than the others is the one that waits. Every job takes a
/// *turn*, in a group of at most `groupTurns` of its owner's turns served one after the other; a group is placed by its
/// owner's level when it began (turns served lately while another owner waited, halving every `halfLife` such turns,
/// beyond one lookup's `groupTurns`, plus jobs queued), levels in order and within a level in arrival order. A phone
/// asking now and then has used little and goes ahead of a flooding owner's next turns; a crowd of phones is served in
/// arrival order, each lookup's two requests one after the other; owners wanting more than the capacity share it by
/// turns. An owner's jobs keep their order: a turn serves its owner's oldest job. When the queue is full, a newcomer
/// can push out the last turn if it would come before it.
package struct FairQueue<Element> {
    /// An owner's turns served together: a phone's lookup is two requests at once.
    package static var groupTurns: Int { 2 }
    /// Turns served in all over which an owner's usage halves: seconds of turns under load, so one lookup's two turns
    /// do not lift a phone to a flood's level, while a phone's lookup is forgotten long before its next call.
    package static var halfLife: Double { 128 }

    /// Where a turn is served: by its owner's level (whole turns served lately and queued when the turn's group
    /// began, rounded), then by the arrival of its group, the turns of one owner taken together (`groupTurns` at most).
    private struct Place: Comparable {
        var level: Int
        var group: UInt64
        var arrival: UInt64

        static func < (a: Place, b: Place) -> Bool { (a.level, a.group, a.arrival) < (b.level, b.group, b.arrival) }
    }

    private struct Turn {
        var place: Place
        var owner: String
    }

    private struct Owner {
        var waiting: Deque<Element> = []
        /// Turns served lately, as of `at` turns served in all.
        var usage = 0.0
        var at: UInt64 = 0
        /// The place of its newest group and the turns placed in that group so far, served or not: a group holds
        /// `groupTurns` turns in all, so an owner that keeps one turn queued does not keep its group's place forever.
        var group: (place: Place, turns: Int)?
    }

    /// Queued turns, in the order they are served.
    private var turns: [Turn] = []
    private var owners: [String: Owner] = [:]
    /// Turns served in all: the clock usage decays by.
    private var served: UInt64 = 0
    private var arrivals: UInt64 = 0
    /// Owners kept at most before those with nothing queued and almost no usage are forgotten.
    private var forgetAbove = 64

    /// Elements queued across owners.
    package var count: Int { turns.count }
    /// Owners with a record kept (queued elements or usage not yet faded), for tests of its bound.
    package var ownersKept: Int { owners.count }

    /// An empty queue.
    package init() {}

    /// Queues `element` behind its owner's earlier elements.
    package mutating func append(_ element: Element, owner: String) {
        let place = placeOfNext(owner)
        arrivals += 1
        turns.insert(Turn(place: place, owner: owner), at: turnsBefore(place))
        var record = owners[owner] ?? Owner()
        if let group = record.group, group.place.group == place.group {
            record.group?.turns += 1
        } else {
            record.group = (place, 1)
        }
        record.waiting.append(element)
        owners[owner] = record
    }

    /// The next job: the first turn's owner's oldest. Its owner is charged the turn if another owner's turn still
    /// waits: usage counts the turns that kept others waiting, so a phone that had the service to itself a moment ago
    /// is not held back for it once a flood arrives.
    package mutating func popFirst() -> Element? {
        guard !turns.isEmpty else { return nil }
        let owner = turns.removeFirst().owner
        let element = owners[owner]?.waiting.popFirst()
        if turns.contains(where: { $0.owner != owner }) { charge(owner) }
        dropIfIdle(owner)
        return element
    }

    /// Counts a turn `owner` took while others waited.
    private mutating func charge(_ owner: String) {
        served += 1
        var record = owners[owner] ?? Owner()
        record.usage = usage(record) + 1
        record.at = served
        owners[owner] = record
        if owners.count > forgetAbove { forget() }
    }

    /// Whether `owner` has an element queued.
    package func has(_ owner: String) -> Bool { owners[owner]?.waiting.isEmpty == false }

    /// Whether the element `owner` appends now would be the second of a pair: its one queued element's turn has
    /// room in its group, so the two are served one after the other (a phone's lookup's second request, while the
    /// first waits).
    package func continuesPair(of owner: String) -> Bool {
        owners[owner]?.waiting.count == 1 && placeOfNext(owner).group != arrivals
    }

    /// How many queued elements would be served before one `owner` appends now: the turns before its owner's last
    /// turn once the new one is placed (a turn serves the owner's oldest element, so the newest is served last).
    package func ahead(of owner: String) -> Int {
        let place = placeOfNext(owner)
        guard let last = turns.last(where: { $0.owner == owner })?.place, place < last else { return turnsBefore(place) }
        return turnsBefore(last) + 1  // the new turn is among those before its owner's last
    }

    /// The newest element of another owner's last turn, if a turn `owner` would take now comes before it.
    package mutating func pushOut(for owner: String) -> Element? {
        guard let last = turns.last, last.owner != owner, placeOfNext(owner) < last.place else { return nil }
        return popLast()
    }

    /// Removes the last turn, with its owner's newest element.
    package mutating func popLast() -> Element? {
        guard let last = turns.popLast() else { return nil }
        defer { dropIfIdle(last.owner) }
        return owners[last.owner]?.waiting.popLast()
    }

    /// Removes `owner`'s first element matching `match` (a request that stopped waiting), with its owner's last
    /// turn; whether one was found.
    package mutating func remove(owner: String, where match: (Element) -> Bool) -> Bool {
        guard let index = owners[owner]?.waiting.firstIndex(where: match),
              let turn = turns.lastIndex(where: { $0.owner == owner }) else {
            return false
        }
        owners[owner]?.waiting.remove(at: index)
        turns.remove(at: turn)
        dropIfIdle(owner)
        return true
    }

    /// The place the next turn of `owner` would take: in its newest group while a turn of it waits and the group
    /// has had fewer than `groupTurns` (a phone's lookup's second request joins its first), else at the level of its
    /// usage and queued elements.
    private func placeOfNext(_ owner: String) -> Place {
        guard let record = owners[owner] else { return Place(level: 0, group: arrivals, arrival: arrivals) }
        if !record.waiting.isEmpty, let group = record.group, group.turns < Self.groupTurns {
            return Place(level: group.place.level, group: group.place.group, arrival: arrivals)
        }
        return Place(level: level(record) + record.waiting.count, group: arrivals, arrival: arrivals)
    }

    /// `record`'s usage beyond one lookup's turns, in whole turns: a phone that called a moment ago has used no more
    /// than its lookup and keeps its place in a crowd, in arrival order, instead of going behind every fresh phone
    /// and being pushed out of the queue after waiting; an owner asking for more than that goes behind.
    private func level(_ record: Owner) -> Int {
        max(0, Int((usage(record) - Double(Self.groupTurns)).rounded()))
    }

    /// How many queued turns are placed before `place` (where a turn placed there goes).
    private func turnsBefore(_ place: Place) -> Int {
        var low = 0, high = turns.count
        while low < high {
            let middle = (low + high) / 2
            if turns[middle].place < place { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// `record`'s usage now.
    private func usage(_ record: Owner) -> Double {
        record.usage * exp2(-Double(served - record.at) / Self.halfLife)
    }

    /// Whether `record` can be forgotten: nothing queued and its usage decayed below half a turn (its next turn is
    /// at level 0 either way).
    private func isIdle(_ record: Owner) -> Bool { record.waiting.isEmpty && usage(record) < 0.5 }

    /// Forgets `owner` if idle.
    private mutating func dropIfIdle(_ owner: String) {
        if let record = owners[owner], isIdle(record) { owners.removeValue(forKey: owner) }
    }

    /// Forgets every idle owner, so the records follow the owners active lately, not every owner ever seen.
    private mutating func forget() {
        owners = owners.filter { !isIdle($0.value) }
        forgetAbove = max(64, 2 * owners.count)
    }
}
