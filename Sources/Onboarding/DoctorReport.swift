/// The result of `callveil doctor`: every check in Apple's order, and the numbers Apple's onboarding form asks for.
public struct DoctorReport: Sendable {
    /// The checks, in the order they ran.
    public var checks: [DoctorCheck]
    /// Lines for the onboarding form (URLs, the TXT record, request and response sizes).
    public var form: [(String, String)]

    /// The checks that failed.
    public var failed: [DoctorCheck] { checks.filter { $0.outcome == .fail } }

    /// The report as text: one line per check with PASS/FAIL/SKIP, the fix under each failure, then the form.
    public func rendered() -> String {
        var lines: [String] = []
        for check in checks {
            let mark = switch check.outcome { case .pass: "PASS"; case .fail: "FAIL"; case .skipped: "SKIP" }
            lines.append("\(mark)  \(check.id): \(check.title) — \(check.detail)")
            if let fix = check.fix { lines.append("      fix: \(fix)") }
        }
        if !form.isEmpty {
            lines.append("")
            lines.append("For Apple's onboarding form:")
            let width = form.map(\.0.count).max() ?? 0
            for (label, value) in form { lines.append("  \(label.padding(toLength: width, withPad: " ", startingAt: 0))  \(value)") }
        }
        lines.append("")
        lines.append(failed.isEmpty ? "All checks passed." : "\(failed.count) check(s) failed: \(failed.map(\.id).joined(separator: ", ")).")
        return lines.joined(separator: "\n")
    }
}
