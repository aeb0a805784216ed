/// Why the compute pool did not run a job.
public struct ComputePoolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' `CertificateError`: compare codes, not messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case busy, deadlinePassed, deadlineUnreachable, cancelled
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// The lane's queue is full: the process is saturated now.
        public static let busy = Code(.busy)
        /// The job waited in the queue past its deadline.
        public static let deadlinePassed = Code(.deadlinePassed)
        /// The jobs ahead of it would keep the job waiting past its deadline: refused at once, not queued to time out.
        public static let deadlineUnreachable = Code(.deadlineUnreachable)
        /// The caller went away before the job started.
        public static let cancelled = Code(.cancelled)
    }

    /// What went wrong.
    public let code: Code
    /// The reason, for logs and clients (never secrets).
    public let description: String

    private init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// The lane's queue is full: the process is saturated now.
    public static func busy(_ lane: ComputePool.Lane) -> ComputePoolError {
        ComputePoolError(.busy, "compute queue full (\(lane))")
    }

    /// The job waited in the queue past its deadline.
    public static let deadlinePassed = ComputePoolError(.deadlinePassed, "waited too long for compute")

    /// The jobs ahead of it would keep the job waiting past its deadline.
    public static let deadlineUnreachable = ComputePoolError(.deadlineUnreachable, "the queue ahead would outlast the deadline")

    /// The caller went away before the job started.
    public static let cancelled = ComputePoolError(.cancelled, "cancelled before it started")
}
