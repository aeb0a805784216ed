import Foundation
import Logging
import Synchronization

/// A log handler writing one line per event to standard error, as logfmt (`ts=… level=info msg="…" key=value`,
/// values quoted when they hold a space, `=` or a quote) or as JSON (`--log-format json`), for log shippers that
/// parse either. Metadata is written as given: callers never log keys, tokens, numbers or user ids.
public struct StructuredLogHandler: LogHandler {
    /// The line format.
    public enum Format: String, Sendable, CaseIterable {
        /// `key=value` pairs.
        case logfmt
        /// One JSON object per line.
        case json
    }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let format: Format
    private let write: @Sendable (String) -> Void

    /// A handler for `label` at `level` writing `format` lines to `write` (standard error by default).
    public init(label: String, level: Logger.Level, format: Format,
                write: @escaping @Sendable (String) -> Void = StructuredLogHandler.standardError) {
        self.label = label
        self.logLevel = level
        self.format = format
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [(String, String)] = [("ts", Self.timestamp()), ("level", event.level.rawValue), ("logger", label),
                                          ("msg", event.message.description)]
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for key in merged.keys.sorted() { fields.append((key, Self.flatten(merged[key]!))) }
        write(Self.line(fields, format: format) + "\n")
    }

    /// One line of `fields` in `format`.
    public static func line(_ fields: [(String, String)], format: Format) -> String {
        switch format {
        case .logfmt:
            return fields.map { "\($0.0)=\(logfmtValue($0.1))" }.joined(separator: " ")
        case .json:
            return "{" + fields.map { "\(jsonString($0.0)):\(jsonString($0.1))" }.joined(separator: ",") + "}"
        }
    }

    /// `value` bare when it is a plain word, else double-quoted with `"`, `\` and control characters escaped.
    static func logfmtValue(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0 != "=" && $0 != "\"" && $0 != "\\" && $0.value != 0x7F }
        return plain ? value : jsonString(value)
    }

    /// `value` as a JSON string literal (also the admin listeners' JSON answers).
    public static func jsonString(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    private static func flatten(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let s): s
        case .stringConvertible(let s): s.description
        case .array(let values): "[" + values.map(flatten).joined(separator: ",") + "]"
        case .dictionary(let values): "{" + values.keys.sorted().map { "\($0)=\(flatten(values[$0]!))" }.joined(separator: ",") + "}"
        }
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, now.tv_nsec / 1_000_000)
    }

    /// Writes `line` to standard error in one call (lines of concurrent tasks do not interleave).
    public static let standardError: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { if errno == EINTR { continue } else { return } }
                offset += n
            }
        }
    }
}
