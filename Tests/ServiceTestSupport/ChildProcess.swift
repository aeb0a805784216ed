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
