import ArgumentParser
import Logging

/// Logs to standard error at `level`; returns the command's logger.
func bootstrapLogging(_ level: String) throws -> Logger {
    guard let parsed = Logger.Level(rawValue: level) else { throw ValidationError("unknown log level \(level)") }
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = parsed
        return handler
    }
    return Logger(label: "callveil")
}
