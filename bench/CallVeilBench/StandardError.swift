import Foundation

/// Writes progress and results text to standard error (the rigs keep standard output for machine-readable output).
func writeStderr(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}
