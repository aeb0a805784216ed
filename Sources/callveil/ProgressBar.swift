#if canImport(Glibc)
import Glibc
#endif

/// Progress output for long jobs on standard error: a redrawn bar on a terminal, a line per tenth otherwise.
struct ProgressBar {
    let label: String
    let total: Int
    private let interactive: Bool
    private var lastTenth = -1

    init(label: String, total: Int) {
        self.label = label
        self.total = max(total, 1)
        #if canImport(Glibc)
        interactive = isatty(2) != 0
        #else
        interactive = false
        #endif
    }

    /// Reports `done` of `total` items.
    mutating func update(_ done: Int) {
        if interactive {
            let width = 30
            let filled = width * done / total
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            writeStderr("\r\(label) [\(bar)] \(done)/\(total)" + (done >= total ? "\n" : ""))
        } else {
            let tenth = 10 * done / total
            if tenth != lastTenth {
                lastTenth = tenth
                writeStderr("\(label): \(done)/\(total)\n")
            }
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
