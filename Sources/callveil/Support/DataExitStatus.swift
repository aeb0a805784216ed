import ArgumentParser
import Dataset

/// Exit statuses of the data tools, after sysexits.h, so a script tells a mistyped flag from a bad row: bad usage
/// 64 (ArgumentParser's, with a usage hint), bad data 65, an input that cannot be read 66, a failure to build or
/// write the output 74. The message goes to standard error without a usage hint.
enum DataExitStatus {
    static let usage: Int32 = 64
    static let badData: Int32 = 65
    static let noInput: Int32 = 66
    static let cannotWrite: Int32 = 74

    /// Writes `message` and returns the exit to throw.
    static func fail(_ message: String, status: Int32) -> ExitCode {
        writeStderr("Error: \(message)\n")
        return ExitCode(status)
    }

    /// The status for a dataset error.
    static func status(of error: DatasetError) -> Int32 {
        switch error.code {
        case .unreadable: noInput
        case .processing: cannotWrite
        default: badData
        }
    }
}
