import Foundation
import LookupProtocol

/// The device platform parsed from `User-Agent` (SPEC-PIR §7.2), deciding which config features it gets.
public struct Platform: Sendable, Equatable {
    /// The operating system family.
    public enum OS: String, Sendable { case iOS, macOS }
    /// OS family.
    public let os: OS
    /// Major and minor version.
    public let major: Int, minor: Int

    /// A platform.
    public init(os: OS, major: Int, minor: Int) {
        self.os = os
        self.major = major
        self.minor = minor
    }

    /// Parses `… iOS/<major>.<minor>[.<patch>] …` or `… Macintosh; OS X <major>.<minor>[.<patch>] …`; nil for
    /// anything else (then the client is treated as the newest).
    public init?(userAgent: String) {
        if let version = Self.version(after: "iOS/", in: userAgent) {
            self.init(os: .iOS, major: version.0, minor: version.1)
        } else if let version = Self.version(after: "Macintosh; OS X ", in: userAgent) {
            self.init(os: .macOS, major: version.0, minor: version.1)
        } else {
            return nil
        }
    }

    /// What this OS version understands.
    public var features: ClientFeatures {
        let minimum = os == .iOS ? (18, 2) : (15, 2)
        return (major, minor) >= minimum ? .newest : .legacy
    }

    /// The config features for a `User-Agent` value; unknown platforms get the newest.
    public static func features(userAgent: String) -> ClientFeatures {
        Platform(userAgent: userAgent)?.features ?? .newest
    }

    private static func version(after marker: String, in text: String) -> (Int, Int)? {
        guard let range = text.range(of: marker) else { return nil }
        let rest = text[range.upperBound...]
        let parts = rest.prefix { $0.isNumber || $0 == "." }.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts.count <= 3, let major = Int(parts[0]), let minor = Int(parts[1]),
              parts.count == 2 || Int(parts[2]) != nil else { return nil }
        return (major, minor)
    }
}
