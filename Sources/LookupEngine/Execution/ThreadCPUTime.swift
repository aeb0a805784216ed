#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The CPU time the calling thread has used: a compute job's CPU against its wall time shows how much of the core
/// it got while it ran, which a wall-clock stage alone cannot tell apart from a slower computation.
package enum ThreadCPUTime {
    /// The calling thread's CPU time so far.
    package static func now() -> Duration {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return .zero }
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }
}
