import Foundation
import LookupEngine
import LookupStorage

/// One reporter's verdict on one number, as the classification-report endpoint stores it. The store keeps one
/// per reporter and number (the latest verdict), so repeating or replaying a report never counts twice.
public struct NumberReport: Sendable, Equatable, Codable {
    /// Where the unwanted communication came in.
    public enum Channel: String, Sendable, Codable, CaseIterable { case call, sms }
    /// The reporter's verdict.
    public enum Verdict: String, Sendable, Codable, CaseIterable { case junk, notJunk }

    /// The reporter's pseudonym (hex), from its reporter credential.
    public var reporter: String
    /// The number in E.164 (`+` and digits).
    public var number: String
    /// Call or SMS.
    public var channel: Channel
    /// Junk or not junk.
    public var verdict: Verdict
    /// Optional category (`[a-z0-9_-]`, at most 32 characters).
    public var category: String?
    /// Optional free-text note (at most 280 characters); stored, never logged.
    public var note: String?
    /// The report's own id (the extension's UUID for it): a replay carries the same one.
    public var reportID: String
    /// When the service received it (seconds since 1970).
    public var receivedAt: Double

    /// A report.
    public init(reporter: String, number: String, channel: Channel, verdict: Verdict, category: String? = nil, note: String? = nil,
                reportID: String, receivedAt: Double) {
        self.reporter = reporter
        self.number = number
        self.channel = channel
        self.verdict = verdict
        self.category = category
        self.note = note
        self.reportID = reportID
        self.receivedAt = receivedAt
    }
}

extension NumberReport {
    /// Whether this report says nothing new over the stored one of the same reporter and number: the same report
    /// id (a replay or a retry), or the same verdict, channel, category and note. The one rule of every store.
    func restates(reportID storedID: String, verdict: String, channel: String, category: String?, note: String?) -> Bool {
        storedID == reportID || (verdict == self.verdict.rawValue && channel == self.channel.rawValue
                                 && category == self.category && note == self.note)
    }
}

/// What storing a report did.
public enum ReportOutcome: String, Sendable, Equatable {
    /// The reporter's first report on the number.
    case new
    /// The reporter changed its verdict (or details) on the number.
    case updated
    /// The same report again (a replay or a retry): nothing changed.
    case duplicate
}

/// The reports on one number, summed.
public struct NumberAggregate: Sendable, Equatable, Codable {
    /// The number (E.164).
    public var number: String
    /// Reporters whose verdict is junk.
    public var junk: Int
    /// Reporters whose verdict is not junk.
    public var notJunk: Int
    /// Distinct reporters.
    public var reporters: Int { junk + notJunk }
    /// First report (seconds since 1970).
    public var firstSeen: Double
    /// Latest report.
    public var lastSeen: Double

    /// An aggregate.
    public init(number: String, junk: Int, notJunk: Int, firstSeen: Double, lastSeen: Double) {
        self.number = number
        self.junk = junk
        self.notJunk = notJunk
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
    }
}

/// The reports on one URL from URL filters (`POST /report`), summed.
public struct URLAggregate: Sendable, Equatable, Codable {
    /// The normalized URL.
    public var url: String
    /// Reports naming it.
    public var reports: Int
    /// First report.
    public var firstSeen: Double
    /// Latest report.
    public var lastSeen: Double
}

/// An operator's decision on a number, which overrides the reports.
public struct ManualDecision: Sendable, Equatable, Codable {
    /// What the operator decided.
    public enum Action: String, Sendable, Codable, CaseIterable {
        /// Block the number whatever the reports say.
        case confirm
        /// Never block it from reports.
        case reject
    }

    /// The number (E.164).
    public var number: String
    /// The decision.
    public var action: Action
    /// Why (shown as the block decision's reason).
    public var note: String
    /// When.
    public var decidedAt: Double

    /// A decision.
    public init(number: String, action: Action, note: String, decidedAt: Double) {
        self.number = number
        self.action = action
        self.note = note
        self.decidedAt = decidedAt
    }
}
