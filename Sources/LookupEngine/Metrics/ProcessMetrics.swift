import Foundation
import Synchronization

/// The process's own metrics by the Prometheus client conventions (`process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, …), read from `/proc/self` at each scrape; nothing where `/proc` is missing.
final class ProcessMetrics: Sendable {
    /// CPU seconds already added to the counter (it only grows by what the process spent since).
    private let countedCPU = Mutex(0.0)

    /// Sets the `process_*` families in `metrics`.
    func record(into metrics: ServiceMetrics) {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return }
        // Fields after the command name, from field 3 (state) on; see proc(5).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 22, let utime = Double(fields[11]), let stime = Double(fields[12]),
              let start = Double(fields[19]), let virtual = Double(fields[20]), let resident = Double(fields[21]) else { return }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK))), page = Double(sysconf(Int32(_SC_PAGESIZE)))
        let cpu = (utime + stime) / ticks
        let added = countedCPU.withLock { counted -> Double in
            let delta = max(0, cpu - counted)
            counted = max(counted, cpu)
            return delta
        }
        metrics.registry.makeCounter(descriptor: ServiceMetrics.descriptor("process_cpu_seconds_total")).increment(by: added)
        metrics.set("process_resident_memory_bytes", resident * page)
        metrics.set("process_virtual_memory_bytes", virtual)
        if let boot = Self.bootTime { metrics.set("process_start_time_seconds", boot + start / ticks) }
        if let open = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            metrics.set("process_open_fds", open.count)
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { metrics.set("process_max_fds", Double(limit.rlim_cur)) }
    }

    /// The boot time (Unix seconds) from `/proc/stat`'s `btime`.
    private static let bootTime: Double? = {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        return stat.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) }
    }()
}
