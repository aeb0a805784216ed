import LookupEngine
import LookupStorage

/// How a list's present entries become the desired ones: numbers whose label changed or that left are removed,
/// numbers whose label changed or that are new are added, kept numbers only get their reason refreshed. One plan
/// for every store, so they cannot disagree on what a publication changes.
package struct DirectoryPlan {
    /// Entries to add, ascending.
    package var additions: [DirectoryEntry] = []
    /// Numbers to remove, ascending.
    package var removals: [Int64] = []
    /// Kept numbers whose reason changed.
    package var reasonUpdates: [(Int64, String)] = []
    /// Entries after the publication.
    package var count = 0

    package init(present: [Int64: (label: String, reason: String)], desired: [DirectoryEntry]) {
        var wanted: [Int64: DirectoryEntry] = [:]
        for entry in desired { wanted[entry.number] = entry }
        count = wanted.count
        for (number, now) in present {
            guard let entry = wanted[number] else { removals.append(number); continue }
            if entry.label != now.label { removals.append(number); additions.append(entry) } else if entry.reason != now.reason {
                reasonUpdates.append((number, entry.reason))
            }
        }
        for (number, entry) in wanted where present[number] == nil { additions.append(entry) }
        additions.sort { $0.number < $1.number }
        removals.sort()
    }
}
