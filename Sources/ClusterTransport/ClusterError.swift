/// Failures of the cluster transport.
public struct ClusterError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' `CertificateError`: compare codes, not messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case malformed, versionMismatch, badChunk, noReplica, timeout, spool
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// A peer sent bytes that are not a valid message.
        public static let malformed = Code(.malformed)
        /// A peer speaks another protocol version.
        public static let versionMismatch = Code(.versionMismatch)
        /// A shard transfer chunk failed its checks.
        public static let badChunk = Code(.badChunk)
        /// No live worker holds the shard.
        public static let noReplica = Code(.noReplica)
        /// A request was not answered in time.
        public static let timeout = Code(.timeout)
        /// The coordinator's spooled copy of a shard could not be written or read.
        public static let spool = Code(.spool)
    }

    /// What went wrong.
    public let code: Code
    /// The reason, for logs and clients (never secrets).
    public let description: String

    private init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// A peer sent bytes that are not a valid message.
    public static func malformed(_ why: String) -> ClusterError {
        ClusterError(.malformed, "malformed cluster message: \(why)")
    }

    /// A peer speaks another protocol version.
    public static func versionMismatch(_ v: UInt32) -> ClusterError {
        ClusterError(.versionMismatch, "cluster protocol version \(v) not supported (this build speaks \(ClusterCodec.version))")
    }

    /// A shard transfer chunk failed its checks.
    public static func badChunk(_ why: String) -> ClusterError {
        ClusterError(.badChunk, "bad shard chunk: \(why)")
    }

    /// No live worker holds the shard.
    public static func noReplica(_ what: String) -> ClusterError {
        ClusterError(.noReplica, "no live replica of \(what)")
    }

    /// A request was not answered in time.
    public static let timeout = ClusterError(.timeout, "timed out")

    /// The coordinator's spooled copy of a shard could not be written or read.
    public static func spool(_ why: String) -> ClusterError {
        ClusterError(.spool, "shard spool: \(why)")
    }
}
