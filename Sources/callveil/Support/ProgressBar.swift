import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Progress output for long jobs on standard error, with rate and ETA: a redrawn bar on a terminal, a line per
/// tenth otherwise.
struct ProgressBar {
    let label: String
    let total: Int
    let unit: String
    private let interactive: Bool
    private var lastTenth = -1
    private var lastDraw: UInt64 = 0
    private let start = DispatchTime.now().uptimeNanoseconds

    init(label: String, total: Int, unit: String = "") {
        self.label = label
        self.total = max(total, 1)
        self.unit = unit
        #if canImport(Glibc)
        interactive = isatty(2) != 0
        #else
        interactive = false
        #endif
    }

    /// Reports `done` of `total` items.
    mutating func update(_ done: Int) {
        let now = DispatchTime.now().uptimeNanoseconds
        let elapsed = Double(now - start) / 1e9
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let eta = rate > 0 ? Double(total - done) / rate : 0
        let figures = "\(Self.amount(done, unit)) of \(Self.amount(total, unit)), \(Self.amount(Int(rate), unit))/s, ETA \(Int(eta.rounded())) s"
        if interactive {
            guard done >= total || now - lastDraw > 100_000_000 else { return }  // redraw at most 10 times a second
            lastDraw = now
            let width = 30
            let filled = width * min(done, total) / total
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            writeStderr("\r\(label) [\(bar)] \(figures)  " + (done >= total ? "\n" : ""))
        } else {
            let tenth = 10 * min(done, total) / total
            if tenth != lastTenth {
                lastTenth = tenth
                writeStderr("\(label): \(figures)\n")
            }
        }
    }

    static func amount(_ n: Int, _ unit: String) -> String {
        guard unit == "B" else { return "\(n)" }
        let mib = Double(n) / 1_048_576
        return mib >= 1024 ? String(format: "%.2f GiB", mib / 1024) : String(format: "%.1f MiB", mib)
    }
}

/// A progress bar shared by threads.
final class SharedProgress: @unchecked Sendable {
    private let lock = NSLock()
    private var bars: [String: ProgressBar] = [:]
    private let labels: [String: (String, String)]

    /// Bars by phase: phase → (label, unit).
    init(labels: [String: (String, String)]) { self.labels = labels }

    func update(phase: String, done: Int, total: Int) {
        lock.withLock {
            if bars[phase] == nil || bars[phase]?.total != max(total, 1) {
                let (label, unit) = labels[phase] ?? (phase, "")
                bars[phase] = ProgressBar(label: label, total: total, unit: unit)
            }
            bars[phase]?.update(done)
        }
    }
}

/// Writes text to standard error.
func writeStderr(_ text: String) {
    var copy = text
    copy.withUTF8 { buffer in
        #if canImport(Glibc)
        // File descriptor 2 is standard error; a short write of progress text is harmless.
        _ = write(2, buffer.baseAddress, buffer.count)
        #endif
    }
}
