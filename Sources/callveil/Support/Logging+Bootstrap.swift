import ArgumentParser
import Logging
import ServiceCore

/// `--log-level` and `--log-format` of the long-running commands.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level (trace, debug, info, notice, warning, error, critical).")
    var logLevel: String = "info"

    @Option(help: "Log line format: logfmt (key=value, quoted where needed) or json (one object per line).")
    var logFormat: String = "logfmt"

    /// Logs to standard error at the level and in the format given; returns the command's logger.
    func bootstrap() throws -> Logger {
        try bootstrapLogging(logLevel, format: logFormat)
    }
}

/// Logs to standard error at `level` in `format`; returns the command's logger.
func bootstrapLogging(_ level: String, format: String = "logfmt") throws -> Logger {
    guard let parsed = Logger.Level(rawValue: level) else { throw ValidationError("unknown log level \(level)") }
    guard let lineFormat = StructuredLogHandler.Format(rawValue: format) else {
        throw ValidationError("unknown log format \(format) (logfmt or json)")
    }
    LoggingSystem.bootstrap { label in StructuredLogHandler(label: label, level: parsed, format: lineFormat) }
    return Logger(label: "callveil")
}
