/// One check of `callveil doctor`: a stable id, what it verified, whether it passed, and on failure the fix.
public struct DoctorCheck: Sendable, Equatable {
    /// How a check ended.
    public enum Outcome: String, Sendable, Equatable {
        case pass, fail, skipped
    }

    /// Stable id (`url.service`, `tls.gateway-h2`, `lookup.test-identity`, …): scripts and tests compare ids.
    public let id: String
    /// What was checked, in a line.
    public let title: String
    public let outcome: Outcome
    /// What was seen.
    public let detail: String
    /// What to change when it failed.
    public let fix: String?

    /// A check that passed.
    public static func pass(_ id: String, _ title: String, _ detail: String) -> DoctorCheck {
        DoctorCheck(id: id, title: title, outcome: .pass, detail: detail, fix: nil)
    }

    /// A check that failed, with its fix.
    public static func fail(_ id: String, _ title: String, _ detail: String, fix: String) -> DoctorCheck {
        DoctorCheck(id: id, title: title, outcome: .fail, detail: detail, fix: fix)
    }

    /// A check not run, and why.
    public static func skipped(_ id: String, _ title: String, _ why: String) -> DoctorCheck {
        DoctorCheck(id: id, title: title, outcome: .skipped, detail: why, fix: nil)
    }
}
