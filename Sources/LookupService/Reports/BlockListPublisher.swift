import Foundation
import LookupProtocol

/// Publishes the blocking list the policy calls for and brings the block PIR database to it. The store holds the
/// desired list (versions); the database records which list version it reflects (`<stem>.blocklist-version`
/// beside its manifest). `update` writes the delta between the two as `set` lines (value `[1]` for a blocked
/// number, `[0]` for one taken off) and applies it with the incremental builder, then records the version, so an
/// interrupted run is finished by the next one: the lines are idempotent.
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

    /// The file recording the list version a database reflects.
    public static func versionFile(manifest: String) -> String {
        let url = URL(fileURLWithPath: manifest)
        let stem = url.deletingPathExtension().deletingPathExtension().lastPathComponent
        return url.deletingLastPathComponent().appendingPathComponent("\(stem).blocklist-version").path
    }

    /// What `update` did.
    public struct Update: Sendable, Equatable {
        /// The list version the database reflected before.
        public var from: Int
        /// The list version it reflects now.
        public var to: Int
        /// Numbers set to blocked.
        public var blocked: Int
        /// Numbers set to not blocked.
        public var unblocked: Int
    }

    /// Brings the block database whose manifest is `manifest` to the newest blocking list: nothing when it is
    /// current. The database's own processing options are kept.
    public func update(manifest: String, threads: Int = 1) async throws -> Update {
        let versionPath = Self.versionFile(manifest: manifest)
        let from = (try? String(contentsOfFile: versionPath, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
        let to = try await store.currentVersion(.blocking)
        guard to != from else { return Update(from: from, to: to, blocked: 0, unblocked: 0) }
        let base = from <= to ? from : 0  // a list store newer than the database's record was reset: start over
        // The store's own incremental feed is the change between the two versions.
        var blocked: [Int64] = [], unblocked: [Int64] = []
        var cursor: Int64?
        repeat {
            let page = try await store.page(.blocking, version: to, since: base, after: cursor, limit: 10_000)
            blocked += page.additions.map(\.number)
            unblocked += page.removals
            cursor = page.next
        } while cursor != nil
        let previous = try DatasetBuilder.Previous(manifestPath: manifest)
        let directory = URL(fileURLWithPath: manifest).deletingLastPathComponent().path
        if !blocked.isEmpty || !unblocked.isEmpty {
            let deltaPath = "\(directory)/.blocklist-delta-\(getpid()).csv"
            defer { try? FileManager.default.removeItem(atPath: deltaPath) }
            var lines = ["op,keyword,value"]
            lines += blocked.map { "set,\(DirectoryEntry.e164($0)),01" }
            lines += unblocked.map { "set,\(DirectoryEntry.e164($0)),00" }
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: deltaPath))
            let builder = DatasetBuilder(options: previous.manifest.options, directory: directory, stem: previous.manifest.stem,
                                         useCase: previous.manifest.useCase, threads: threads)
            _ = try builder.apply(delta: deltaPath, to: previous)
        }
        try Data("\(to)\n".utf8).write(to: URL(fileURLWithPath: versionPath), options: .atomic)
        return Update(from: from, to: to, blocked: blocked.count, unblocked: unblocked.count)
    }
}
