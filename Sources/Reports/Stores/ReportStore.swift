import LookupEngine
import LookupStorage

/// Where reports, operator decisions and the published Call Directory lists live: a SQLite file on one host, or
/// the shared PostgreSQL store when several front doors take reports. Every write is idempotent: a replayed report
/// changes nothing, and publishing the same list twice makes no new version.
public protocol ReportStore: Sendable {
    /// Stores a reporter's report on a number: one per reporter and number, the latest verdict kept.
    func record(_ report: NumberReport) async throws -> ReportOutcome
    /// Counts a URL filter's report of matched URLs (already normalized).
    func recordURLs(_ urls: [String], at time: Double) async throws
    /// Reports, newest first, on one number or on all; at most `limit`.
    func reports(number: String?, limit: Int) async throws -> [NumberReport]
    /// Per-number sums of numbers with at least `minReporters` reporters, most junk first; at most `limit`.
    func aggregates(minReporters: Int, limit: Int) async throws -> [NumberAggregate]
    /// Per-URL sums, most reported first; at most `limit`.
    func urlAggregates(limit: Int) async throws -> [URLAggregate]
    /// Records (or replaces) the operator's decision on a number; `nil` action clears it.
    func decide(number: String, action: ManualDecision.Action?, note: String, at time: Double) async throws
    /// Every standing decision.
    func decisions() async throws -> [ManualDecision]
    /// Makes `entries` the list's content: the next version when anything but reasons changed (reasons of kept
    /// entries are updated in place), else the current version.
    func publish(_ list: DirectoryList, entries: [DirectoryEntry], at time: Double) async throws -> DirectoryPublication
    /// The list's newest version (0: never published).
    func currentVersion(_ list: DirectoryList) async throws -> Int
    /// A page of the list at `version`: all entries (`since` nil) or the changes since `since`, numbers above
    /// `after`, at most `limit` items (a relabelled number's removal and addition stay on one page).
    func page(_ list: DirectoryList, version: Int, since: Int?, after: Int64?, limit: Int) async throws -> DirectoryPage
    /// The entries of the list at `version`, with their reasons.
    func entries(_ list: DirectoryList, version: Int) async throws -> [DirectoryEntry]
}

extension DirectoryPage {
    /// Merges additions and removals (each ascending, each up to `limit + 1` long) into one page of at most `limit`
    /// items, never splitting one number's removal and addition.
    static func merge(version: Int, since: Int?, additions: [DirectoryEntry], removals: [Int64], limit: Int) -> DirectoryPage {
        var page = DirectoryPage(version: version, since: since, additions: [], removals: [], next: nil)
        var a = 0, r = 0, taken = 0
        var last: Int64?
        while a < additions.count || r < removals.count {
            let number = min(a < additions.count ? additions[a].number : .max, r < removals.count ? removals[r] : .max)
            if taken >= limit, number != last { page.next = last; break }
            if r < removals.count, removals[r] == number { page.removals.append(number); r += 1 } else {
                page.additions.append(additions[a]); a += 1
            }
            taken += 1
            last = number
        }
        return page
    }
}
