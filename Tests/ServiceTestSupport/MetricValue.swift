import Foundation

/// The value of one series (name and labels as exposed, e.g. `callveil_key_cache_lookups_total{result="hit"}`) in
/// a `/metrics` exposition, 0 when it has no sample yet.
public func metricValue(_ exposition: String, _ series: String) -> Double {
    let prefix = series + " "
    guard let line = exposition.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return 0 }
    return Double(line.dropFirst(prefix.count)) ?? 0
}
