import Foundation

/// The number of observations of `stage` in `callveil_lookup_stage_seconds`, read from a `/metrics` exposition
/// (0 when the stage has none yet).
public func stageCount(_ exposition: String, _ stage: String) -> Int {
    let prefix = "callveil_lookup_stage_seconds_count{stage=\"\(stage)\"} "
    guard let line = exposition.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return 0 }
    return Int(line.dropFirst(prefix.count)) ?? 0
}
