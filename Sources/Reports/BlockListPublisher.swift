import Dataset
import Foundation
import LookupEngine
import LookupProtocol
import LookupStorage

/// Publishes the blocking list the policy calls for and lays it over the block PIR database. The store holds the
/// desired list (versions); the database holds the provider's curated rows and, recorded in its manifest with each
/// listed number's curated value, the list it applies (`DatasetOverlay`). A number answers blocked when the curated
/// data blocks it or the published list has it: `update` moves the database from the list it applies to the
/// store's current one (a set difference, so a reset store is followed too), and a number leaving the list gets its
/// curated value back, never a blanket "not blocked". The list and the shards change in one manifest rename, so a
/// crash leaves the old pair or the new one, and a curated update keeps the list applied.
public struct BlockListPublisher: Sendable {
    /// Where reports and lists live.
    public let store: any ReportStore
    /// The rule.
    public let policy: ReportPolicy

    /// A publisher.
    public init(store: any ReportStore, policy: ReportPolicy) {
        self.store = store
        self.policy = policy
    }

    /// Publishes the blocking list the reports and decisions call for now; returns what changed.
    public func publish(now: Double = Date().timeIntervalSince1970) async throws -> DirectoryPublication {
        // A number with fewer reporters than the threshold cannot cross it: only the others are read.
        let aggregates = try await store.aggregates(minReporters: policy.minJunkReporters ?? ReportPolicy.defaultMinJunkReporters, limit: Int.max)
        let entries = policy.blockingList(aggregates: aggregates, decisions: try await store.decisions())
        return try await store.publish(.blocking, entries: entries, at: now)
    }

    /// What `update` did.
    public struct Update: Sendable, Equatable {
        /// The list version the database applied before (0: none).
        public var from: Int
        /// The list version it applies now.
        public var to: Int
        /// Numbers that joined the list.
        public var blocked: Int
        /// Numbers that left it (each back to its curated value).
        public var unblocked: Int
    }

    /// The value a listed number answers in the block database.
    public static let blockedValue: [UInt8] = [1]

    /// Brings the block database whose manifest is `manifest` to the newest blocking list: nothing when it already
    /// applies that list. The database's own processing options are kept.
    public func update(manifest: String, threads: Int = 1) async throws -> Update {
        let previous = try DatasetBuilder.Previous(manifestPath: manifest)
        let applied = try previous.manifest.readOverlay(directory: previous.directory)
        let to = try await store.currentVersion(.blocking)
        var listed: [String] = []
        var cursor: Int64?
        repeat {
            let page = try await store.page(.blocking, version: to, since: nil, after: cursor, limit: 10_000)
            listed += page.additions.map { DirectoryEntry.e164($0.number) }
            cursor = page.next
        } while cursor != nil
        let was = applied?.keywords ?? []
        let now = Set(listed)
        let from = applied?.version ?? 0
        guard applied?.version != to || was != now || applied?.forcedValue != Self.blockedValue else {
            return Update(from: from, to: to, blocked: 0, unblocked: 0)
        }
        let builder = DatasetBuilder(options: previous.manifest.options, directory: previous.directory, stem: previous.manifest.stem,
                                     useCase: previous.manifest.useCase, threads: threads)
        _ = try builder.apply(list: DirectoryList.blocking.rawValue, version: to, keywords: listed, value: Self.blockedValue, to: previous)
        return Update(from: from, to: to, blocked: now.subtracting(was).count, unblocked: was.subtracting(now).count)
    }
}
