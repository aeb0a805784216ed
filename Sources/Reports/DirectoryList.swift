import LookupEngine
import LookupStorage

/// The versioned public lists the Call Directory feed serves: every publication that changes a list makes its
/// next version, and every version stays readable, so an app pages through a fixed version and asks later for the
/// changes since it.
public enum DirectoryList: String, Sendable, Codable, CaseIterable {
    /// Numbers to block (`addBlockingEntry`).
    case blocking
    /// Numbers with a label (`addIdentificationEntry`).
    case identification
}

/// One entry of a list: the number as `CXCallDirectoryPhoneNumber` (country code and digits), its label
/// (identification only; empty for blocking) and why it is on the list.
public struct DirectoryEntry: Sendable, Equatable, Codable {
    /// Country code and digits, as CallKit takes them.
    public var number: Int64
    /// The identification label ("" on the blocking list).
    public var label: String
    /// Why the number is listed (reports, a manual decision, an import).
    public var reason: String

    /// An entry.
    public init(number: Int64, label: String = "", reason: String) {
        self.number = number
        self.label = label
        self.reason = reason
    }

    /// The `CXCallDirectoryPhoneNumber` of an E.164 number (`+` and 7 to 15 digits), nil when it is not one.
    public static func phoneNumber(e164: String) -> Int64? {
        guard e164.hasPrefix("+"), let value = Int64(e164.dropFirst()), value > 0,
              e164.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }), (7...15).contains(e164.count - 1) else { return nil }
        return value
    }

    /// The E.164 form of a CallKit number.
    public static func e164(_ number: Int64) -> String { "+\(number)" }
}

/// What publishing a list did.
public struct DirectoryPublication: Sendable, Equatable {
    /// The list's version after publishing (unchanged when nothing changed).
    public var version: Int
    /// Numbers added (or relabelled) by this version.
    public var additions: [Int64]
    /// Numbers taken out (or relabelled) by this version.
    public var removals: [Int64]

    /// A publication's result.
    public init(version: Int, additions: [Int64], removals: [Int64]) {
        self.version = version
        self.additions = additions
        self.removals = removals
    }
}

/// One page of a list at a version: everything (`since` nil) or the changes since a version. Apply removals
/// before additions: a relabelled number is in both.
public struct DirectoryPage: Sendable, Equatable {
    /// The version the page describes.
    public var version: Int
    /// The version the changes are from (nil: a full list).
    public var since: Int?
    /// Entries added, ascending by number.
    public var additions: [DirectoryEntry]
    /// Numbers removed, ascending.
    public var removals: [Int64]
    /// The cursor of the next page (the last number of this one), nil on the last page.
    public var next: Int64?
}
