import Foundation

/// Runs `executable` with `arguments` to its end, waiting off the concurrency pool (`offPool`): what it wrote to
/// standard output (and standard error too, with `mergeErrors`), and its exit status.
public func runChildProcess(_ executable: String, _ arguments: [String], mergeErrors: Bool = true) async throws
    -> (output: Data, status: Int32) {
    try await offPool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        if mergeErrors { process.standardError = output }
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (data, process.terminationStatus)
    }
}

/// Runs a `callveil-bench` probe (the debug build `swift build` / `swift test` makes) in a process of its own, where no
/// other test's allocations move its measurements, and decodes the JSON object it prints.
public func runBenchProbe(_ arguments: [String]) async throws -> [String: Int] {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let binary = root.appendingPathComponent(".build/debug/callveil-bench").path
    guard FileManager.default.isExecutableFile(atPath: binary) else {
        throw ProbeError("\(binary) is built by `swift build` / `swift test`")
    }
    let (data, status) = try await runChildProcess(binary, arguments, mergeErrors: false)
    guard status == 0, let report = try JSONSerialization.jsonObject(with: data) as? [String: Int] else {
        throw ProbeError("callveil-bench \(arguments.joined(separator: " ")) exited \(status): \(String(decoding: data, as: UTF8.self))")
    }
    return report
}

/// A probe that could not run or printed no report.
public struct ProbeError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
