import Foundation
import Synchronization

/// A clock tests set by hand, for key rings whose rotation depends on the date: starts at a fixed instant and
/// moves only when told.
public final class ManualClock: Sendable {
    /// One day, in seconds.
    public static let day: TimeInterval = 86400
    /// Where the clock starts.
    public let start: Date
    private let current: Mutex<Date>

    /// A clock at `start` (a fixed instant, so runs are alike).
    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.start = start
        current = Mutex(start)
    }

    /// The time now.
    public var now: Date { current.withLock { $0 } }

    /// Sets the time to `days` after the start.
    public func set(days: Double) {
        current.withLock { $0 = start.addingTimeInterval(days * Self.day) }
    }

    /// The clock as the key rings take it.
    public var read: @Sendable () -> Date { { [self] in now } }
}
