import Foundation

/// The number of observations of `stage` in `callveil_lookup_stage_seconds`, read from a `/metrics` exposition
/// (0 when the stage has none yet).
public func stageCount(_ exposition: String, _ stage: String) -> Int {
    Int(metricValue(exposition, "callveil_lookup_stage_seconds_count{stage=\"\(stage)\"}"))
}
