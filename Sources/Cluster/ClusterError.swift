/// Failures of the cluster transport.
public enum ClusterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A peer sent bytes that are not a valid message.
    case malformed(String)
    /// A peer speaks another protocol version.
    case versionMismatch(UInt32)
    /// A shard transfer chunk failed its checks.
    case badChunk(String)
    /// No live worker holds the shard.
    case noReplica(String)
    /// A request was not answered in time.
    case timeout

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed cluster message: \(why)"
        case .versionMismatch(let v): return "cluster protocol version \(v) not supported (this build speaks \(ClusterCodec.version))"
        case .badChunk(let why): return "bad shard chunk: \(why)"
        case .noReplica(let what): return "no live replica of \(what)"
        case .timeout: return "timed out"
        }
    }
}
