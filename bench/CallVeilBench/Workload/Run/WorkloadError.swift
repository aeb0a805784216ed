import Foundation

/// A workload tool's error: what went wrong, for the operator of the run.
struct WorkloadError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
