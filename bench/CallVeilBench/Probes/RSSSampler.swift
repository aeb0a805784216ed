import Foundation
import Synchronization

/// Samples a process's resident set size (`VmRSS` in `/proc/<pid>/status`) every 100 ms on a thread of its own
/// and keeps the peak.
final class RSSSampler: Sendable {
    let pid: Int32
    private let state = Mutex((peak: 0, stopped: false))

    init(pid: Int32) { self.pid = pid }

    /// The highest RSS seen so far, bytes.
    var peak: Int { state.withLock { $0.peak } }

    func start() {
        Thread.detachNewThread { [self] in
            while !state.withLock({ $0.stopped }) {
                if let bytes = Self.rss(pid) { state.withLock { $0.peak = max($0.peak, bytes) } }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    func stop() { state.withLock { $0.stopped = true } }

    /// The RSS of `pid` now, bytes.
    static func rss(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return nil }
        return kib << 10
    }
}
