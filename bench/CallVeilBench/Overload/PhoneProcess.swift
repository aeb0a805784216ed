import Foundation

/// The `callveil-bench overload-phone` child process seen from `callveil-bench overload`: started with the same executable,
/// stopped by closing its standard input, its report read from its standard output.
final class PhoneProcess: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe(), output = Pipe()

    /// Starts the phone and returns once it has synced its keys and started looking up (it printed `ready`).
    init(arguments: [String]) async throws {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["overload-phone"] + arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let first = await Self.readLine(output.fileHandleForReading)
        guard first == "ready" else {
            process.terminate()
            throw PhoneProcessError(message: "the phone process did not start: \(first ?? "no output")")
        }
    }

    /// Stops the phone (it finishes the lookup under way) and returns its report.
    func finish() async throws -> OverloadPhone.Report {
        try input.fileHandleForWriting.close()
        let handle = output.fileHandleForReading
        let rest = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: (try? handle.readToEnd()) ?? Data()) }
        }
        process.waitUntilExit()
        let line = String(decoding: rest, as: UTF8.self).split(separator: "\n").last.map(String.init)
        guard let line, let report = try? JSONDecoder().decode(OverloadPhone.Report.self, from: Data(line.utf8)) else {
            throw PhoneProcessError(message: "the phone process ended without a report (exit \(process.terminationStatus))")
        }
        return report
    }

    /// Reads one line, a byte at a time so that nothing after it is consumed (off the concurrency pool, which must
    /// not block on a pipe); nil at end of file.
    private static func readLine(_ handle: FileHandle) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var bytes: [UInt8] = []
                while true {
                    guard let byte = try? handle.read(upToCount: 1), let b = byte.first else {
                        return continuation.resume(returning: bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self))
                    }
                    if b == UInt8(ascii: "\n") { return continuation.resume(returning: String(decoding: bytes, as: UTF8.self)) }
                    bytes.append(b)
                }
            }
        }
    }
}

/// The phone process failed to start or to report.
struct PhoneProcessError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
