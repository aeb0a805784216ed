import Foundation
import LookupEngine
import LookupStorage

/// The rule that turns reports into the blocking list: a number is blocked when at least `minJunkReporters`
/// distinct reporters call it junk and junk verdicts are at least `minJunkShare` of its reporters; an operator's
/// confirm blocks it regardless, a reject or the allow-list never lets reports block it. Every decision keeps its
/// reason.
public struct ReportPolicy: Codable, Sendable, Equatable {
    /// `minJunkReporters` when not set.
    public static let defaultMinJunkReporters = 5
    /// Distinct junk reporters needed (default 5).
    public var minJunkReporters: Int?
    /// Share of junk verdicts among the number's reporters needed (default 0.8).
    public var minJunkShare: Double?
    /// Numbers never blocked from reports (E.164); a manual confirm still blocks them.
    public var allowList: [String]?

    /// A policy.
    public init(minJunkReporters: Int? = nil, minJunkShare: Double? = nil, allowList: [String]? = nil) {
        self.minJunkReporters = minJunkReporters
        self.minJunkShare = minJunkShare
        self.allowList = allowList
    }

    /// Checks the bounds.
    public func validate() throws {
        if let n = minJunkReporters, n < 1 || n > 1_000_000 { throw ConfigError("reports.policy.minJunkReporters \(n) out of range") }
        if let s = minJunkShare, !(s > 0 && s <= 1) { throw ConfigError("reports.policy.minJunkShare \(s) out of range (0, 1]") }
        for number in allowList ?? [] where DirectoryEntry.phoneNumber(e164: number) == nil {
            throw ConfigError("reports.policy.allowList: \(number) is not an E.164 number")
        }
    }

    /// The blocking list the reports and decisions call for, ascending.
    public func blockingList(aggregates: [NumberAggregate], decisions: [ManualDecision]) -> [DirectoryEntry] {
        let minReporters = minJunkReporters ?? Self.defaultMinJunkReporters, share = minJunkShare ?? 0.8
        let allowed = Set(allowList ?? [])
        var decided: [String: ManualDecision] = [:]
        for decision in decisions { decided[decision.number] = decision }
        var entries: [Int64: DirectoryEntry] = [:]
        for aggregate in aggregates where decided[aggregate.number] == nil && !allowed.contains(aggregate.number) {
            guard aggregate.junk >= minReporters, Double(aggregate.junk) >= share * Double(aggregate.reporters),
                  let number = DirectoryEntry.phoneNumber(e164: aggregate.number) else { continue }
            entries[number] = DirectoryEntry(number: number, reason: "reports: \(aggregate.junk) junk, \(aggregate.notJunk) not junk")
        }
        for decision in decisions where decision.action == .confirm {
            guard let number = DirectoryEntry.phoneNumber(e164: decision.number) else { continue }
            entries[number] = DirectoryEntry(number: number, reason: "manual: \(decision.note)")
        }
        return entries.values.sorted { $0.number < $1.number }
    }
}
