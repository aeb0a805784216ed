import Foundation
import Synchronization

/// Samples a quantity (a process's resident set size, the malloc heap's bytes in use) on a thread of its own at a
/// fixed interval and keeps the peak.
final class PeakSampler: Sendable {
    private let interval: TimeInterval
    private let sample: @Sendable () -> Int?
    private let state = Mutex((peak: 0, stopped: false))

    /// Samples `sample` every `interval` seconds once started (a nil sample is skipped).
    init(every interval: TimeInterval, sample: @escaping @Sendable () -> Int?) {
        self.interval = interval
        self.sample = sample
    }

    /// Samples the RSS of `pid` every 100 ms (`VmRSS` in `/proc/<pid>/status`).
    convenience init(pid: Int32) {
        self.init(every: 0.1) { PeakSampler.rss(pid) }
    }

    /// The highest value seen so far.
    var peak: Int { state.withLock { $0.peak } }

    func start() {
        Thread.detachNewThread { [self] in
            while !state.withLock({ $0.stopped }) {
                if let value = sample() { state.withLock { $0.peak = max($0.peak, value) } }
                Thread.sleep(forTimeInterval: interval)
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
