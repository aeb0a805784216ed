import Dataset
import Foundation
import LookupEngine
import LookupProtocol
import LookupStorage

/// Reads the body the system POSTs to an Unwanted Communication Reporting extension's network destination
/// (`ILClassificationExtensionNetworkReportDestination`): a JSON object carrying the extension's
/// `ILClassificationResponse`, its action and its `userInfo`. Apple documents that the report holds "both the
/// classification action and the contents of the user info dictionary"; CallVeil reads the action from
/// `classification` or `action` (`reportJunk`, `reportJunkAndBlockSender`, `reportNotJunk`, or their raw values
/// 2, 3, 1) and the user info from `app` or `userInfo`, next to an optional `_version` of 1, as the system's other
/// JSON requests are shaped. The user info is CallVeil's schema (docs/provider-guide.md):
/// `{"reporter": credential, "reportId": UUID, "number": E.164, "channel": "call"|"sms",
/// "verdict": "junk"|"notJunk" (optional when the action says it), "category": optional, "note": optional}`.
public enum ClassificationReport {
    /// Largest note kept, in characters.
    public static let maxNoteLength = 280

    /// The envelope as sent; every field optional here, checked in `parse`.
    struct Envelope: Decodable {
        var version: Int?
        var classification: Action?
        var action: Action?
        var app: UserInfo?
        var userInfo: UserInfo?

        enum CodingKeys: String, CodingKey { case version = "_version", classification, action, app, userInfo }
    }

    /// An `ILClassificationAction`, by name or raw value.
    enum Action: Decodable {
        case name(String)
        case raw(Int)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Int.self) { self = .raw(value) } else { self = .name(try container.decode(String.self)) }
        }
    }

    /// CallVeil's `userInfo` schema.
    struct UserInfo: Decodable {
        var reporter: String?
        var reportId: String?
        var number: String?
        var channel: String?
        var verdict: String?
        var category: String?
        var note: String?
    }

    /// The report in `body`, received at `now`, its reporter checked with `credentials`.
    public static func parse(_ body: [UInt8], credentials: ReporterCredential, now: Double) throws -> NumberReport {
        let envelope: Envelope
        do { envelope = try JSONDecoder().decode(Envelope.self, from: Data(body)) } catch let error as DecodingError {
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context):
                let path = context.codingPath.map(\.stringValue).joined(separator: ".")
                if path.isEmpty { throw ReportError(.malformedJSON, "the body is not a JSON object") }
                throw ReportError(.badField, "\(path) has the wrong type")
            default: throw ReportError(.malformedJSON, "the body is not a JSON object")
            }
        }
        if let version = envelope.version, version != 1 { throw ReportError(.badField, "_version must be 1") }
        guard let info = envelope.app ?? envelope.userInfo else { throw ReportError(.badField, "no user info (\"app\" or \"userInfo\")") }
        let actionVerdict = try verdict(ofAction: envelope.classification ?? envelope.action)
        guard let credential = info.reporter else { throw ReportError(.unauthenticated, "no reporter credential") }
        guard let reporter = credentials.verify(credential) else { throw ReportError(.unauthenticated, "the reporter credential is not valid") }
        let number = try bounded(info.number, "number", max: 32)
        guard let e164 = IdentityDataset.normalize(number), DirectoryEntry.phoneNumber(e164: e164) != nil else {
            throw ReportError(.badNumber, "number is not an E.164 number")
        }
        guard let channel = NumberReport.Channel(rawValue: try bounded(info.channel, "channel", max: 8)) else {
            throw ReportError(.badField, "channel must be call or sms")
        }
        var verdict = actionVerdict
        if let text = info.verdict {
            guard let stated = NumberReport.Verdict(rawValue: text) else { throw ReportError(.badField, "verdict must be junk or notJunk") }
            if let actionVerdict, actionVerdict != stated { throw ReportError(.badField, "verdict contradicts the action") }
            verdict = stated
        }
        guard let verdict else { throw ReportError(.badField, "neither an action nor a verdict") }
        let reportID = try bounded(info.reportId, "reportId", max: 64)
        guard !reportID.isEmpty, reportID.utf8.allSatisfy(ReporterCredential.isURLSafe) else { throw ReportError(.badField, "reportId must be 1 to 64 of [A-Za-z0-9-_]") }
        var category: String?
        if let value = info.category {
            guard !value.isEmpty, value.utf8.count <= 32, value.utf8.allSatisfy(ReporterCredential.isURLSafe) else {
                throw ReportError(.badField, "category must be 1 to 32 of [A-Za-z0-9-_]")
            }
            category = value.lowercased()
        }
        var note: String?
        if let value = info.note {
            guard value.count <= maxNoteLength else { throw ReportError(.badField, "note is longer than \(maxNoteLength) characters") }
            note = value.isEmpty ? nil : value
        }
        return NumberReport(reporter: reporter, number: e164, channel: channel, verdict: verdict, category: category, note: note,
                            reportID: reportID, receivedAt: now)
    }

    /// The verdict an `ILClassificationAction` implies; nil when absent; `none` and unknown actions are refused.
    static func verdict(ofAction action: Action?) throws -> NumberReport.Verdict? {
        switch action {
        case nil: return nil
        case .name("reportJunk"), .name("reportJunkAndBlockSender"), .raw(2), .raw(3): return .junk
        case .name("reportNotJunk"), .raw(1): return .notJunk
        case .name("none"), .raw(0): throw ReportError(.badField, "the action none carries no report")
        default: throw ReportError(.badField, "unknown classification action")
        }
    }

    private static func bounded(_ value: String?, _ key: String, max: Int) throws -> String {
        guard let value else { throw ReportError(.badField, "\(key) is missing") }
        guard value.utf8.count <= max else { throw ReportError(.badField, "\(key) is longer than \(max) bytes") }
        return value
    }
}
