import Foundation
import LookupEngine
import Synchronization

/// Secret keys rotated with overlap, persistent in a key directory or in the shared store
/// (`PostgresRotatingKeyStore`), one active key per group.
///
/// A successor is created when the newest key of a group is within `overlap` (plus `overlap` again for a kind that
/// publishes ahead) of its end; it starts at the later of now and the old key's end minus `overlap`, so the old
/// key stays accepted for `overlap` after its successor takes over. Expired keys are dropped. Readers take the
/// entries and the kind's derived value briefly, never across key generation.
public final class RotatingKeyRing<Kind: RotatingKeyKind>: Sendable {
    /// One key.
    public typealias Entry = RotatingKeyEntry<Kind.Key>

    /// The kind of key.
    public let kind: Kind
    /// The key directory (nil: the keys live in the shared store).
    public let directory: String?
    /// Validity of each key.
    public let lifetime: TimeInterval
    /// Acceptance of a key after its successor takes over (and publication lead, for a kind that publishes ahead).
    public let overlap: TimeInterval
    /// Now.
    public let clock: @Sendable () -> Date
    private let state: Mutex<(entries: [Entry], derived: Kind.Derived)>
    /// Serializes changes: held across key generation, which readers never wait for.
    private let changing = Mutex<Void>(())

    /// An empty ring (`directory` nil: the shared store fills it), or the ring stored in `directory`.
    public init(_ kind: Kind, directory: String?, lifetime: TimeInterval, overlap: TimeInterval,
                clock: @escaping @Sendable () -> Date = { Date() }) throws {
        guard lifetime > 2 * overlap, overlap > 0 else { throw ConfigError("\(kind.ring) key lifetime must exceed twice the overlap") }
        self.kind = kind
        self.directory = directory
        self.lifetime = lifetime
        self.overlap = overlap
        self.clock = clock
        self.state = Mutex(([], try kind.derive(from: [])))
        if let directory { try replace(try Self.load(kind, from: directory)) }
    }

    /// Every key held, ascending by start (then identifier).
    public var entries: [Entry] { state.withLock { $0.entries } }

    /// What readers use, derived from the current entries.
    public var derived: Kind.Derived { state.withLock { $0.derived } }

    /// When the next rotation is due (the earliest over groups of its newest key's end less the overlap and lead) and
    /// the earliest end of a group's newest key; nil while the ring is empty. Monitoring alerts on both.
    public var schedule: (rotationDue: Date, expiry: Date)? {
        let newest = Dictionary(grouping: entries, by: \.group).values.compactMap { $0.map(\.notAfter).max() }
        guard let expiry = newest.min() else { return nil }
        return (expiry.addingTimeInterval(-overlap - lead), expiry)
    }

    /// Makes sure every group has an active key and a successor when rotation is due, and drops expired keys, in
    /// the key directory; returns whether anything changed. A ring on the shared store changes through the store.
    @discardableResult
    public func ensure(groups: [String]) throws -> Bool {
        let directory = try ownDirectory()
        return try changing.withLock { _ in
            guard let planned = try planned(from: entries, groups: groups) else { return false }
            try Self.save(planned, kind: kind, in: directory)
            try replace(planned)
            return true
        }
    }

    /// Starts a rotation of `group` now: a successor is created (starting after the publication lead), and the
    /// group's other keys stay accepted `overlap` after it starts, no longer.
    public func rotate(group: String) throws {
        let directory = try ownDirectory()
        try changing.withLock { _ in
            let now = clock()
            let start = now.addingTimeInterval(lead)
            var entries = self.entries.filter { now < $0.notAfter }.map { e in
                e.group == group ? Entry(group: e.group, key: e.key, notBefore: e.notBefore,
                                         notAfter: min(e.notAfter, start.addingTimeInterval(overlap))) : e
            }
            entries.append(Entry(group: group, key: try kind.generate(avoiding: Self.ordered(entries, by: kind)), notBefore: start,
                                 notAfter: start.addingTimeInterval(lifetime)))
            try Self.save(entries, kind: kind, in: directory)
            try replace(entries)
        }
    }

    /// The ring after expired keys are dropped and every group given an active key and, when due, a successor;
    /// nil when nothing changes. Generating a key may take seconds.
    public func planned(from current: [Entry], groups: [String]) throws -> [Entry]? {
        let now = clock()
        var entries = current.filter { now < $0.notAfter }
        var changed = entries.count != current.count
        for group in Set(groups).sorted() {
            var start = now
            if let newest = entries.filter({ $0.group == group }).max(by: { $0.notBefore < $1.notBefore }) {
                guard now >= newest.notAfter.addingTimeInterval(-overlap - lead) else { continue }
                start = max(now, newest.notAfter.addingTimeInterval(-overlap))
            }
            entries.append(Entry(group: group, key: try kind.generate(avoiding: Self.ordered(entries, by: kind)), notBefore: start,
                                 notAfter: start.addingTimeInterval(lifetime)))
            changed = true
        }
        return changed ? entries : nil
    }

    /// Replaces what the ring holds (after reading the shared store, or a change), in one order whoever produced
    /// the entries.
    public func replace(_ entries: [Entry]) throws {
        let ordered = Self.ordered(entries, by: kind)
        let derived = try kind.derive(from: ordered)
        state.withLock { $0 = (ordered, derived) }
    }

    /// `entries` ascending by start, then identifier.
    static func ordered(_ entries: [Entry], by kind: Kind) -> [Entry] {
        entries.map { (entry: $0, id: kind.identifier(of: $0.key)) }.sorted { a, b in
            a.entry.notBefore != b.entry.notBefore ? a.entry.notBefore < b.entry.notBefore : a.id.lexicographicallyPrecedes(b.id)
        }.map(\.entry)
    }

    /// How long before it takes over a successor is published: the overlap for a kind that publishes ahead.
    private var lead: TimeInterval { kind.publishesAhead ? overlap : 0 }

    private func ownDirectory() throws -> String {
        guard let directory else { throw ConfigError("a \(kind.ring) key ring on the shared store is changed through the store") }
        return directory
    }
}
