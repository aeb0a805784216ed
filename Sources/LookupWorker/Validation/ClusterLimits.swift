import ClusterTransport

/// Bounds on every field a cluster peer sends, checked before the field is used: a member of the cluster is
/// trusted to be who it is, not to send sane values.
public enum ClusterLimits {
    /// Longest worker id (bytes).
    public static let maxWorkerIDBytes = 128
    /// Longest use-case name (bytes).
    public static let maxUseCaseBytes = 256
    /// Longest config id (bytes).
    public static let maxConfigIDBytes = 64
    /// Most shards a worker may report loaded or in transfer.
    public static let maxReportedShards = 65_536
    /// Shards of one version.
    public static let maxShardIndex = 1 << 20
    /// Largest shard file (bytes).
    public static let maxShardBytes: UInt64 = 1 << 40
    /// Longest reason string forwarded from a worker (characters).
    public static let maxReasonCharacters = 200
    /// Longest user identifier in a key fetch (bytes).
    public static let maxUserBytes = 1024
    /// Longest key identifier (key-config hash) in a key fetch (bytes).
    public static let maxKeyIdentifierBytes = 64
    /// Largest inbound ZeroMQ message: the codec's bound plus the envelope.
    public static let maxFrameBytes = ClusterCodec.maxMessageBytes + 4096
    /// Credit a worker may claim.
    public static let creditRange = 1...256

    /// Longest `traceparent` or `tracestate` field a query may carry (W3C Trace Context caps tracestate at 512).
    public static let maxTraceFieldBytes = 512

    /// The trace context fields of a query if they are only W3C Trace Context's two, printable and bounded; nil
    /// otherwise (a bad context loses the trace, never the query).
    public static func traceCarrier(_ fields: [String: String]) -> [String: String]? {
        guard fields.count <= 2, fields.allSatisfy({ key, value in
            (key == "traceparent" || key == "tracestate") && value.utf8.count <= maxTraceFieldBytes
                && value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7f }
        }) else { return nil }
        return fields
    }

    /// Whether a worker id is acceptable (printable ASCII without spaces or quotes, bounded).
    public static func isValidWorkerID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        return !bytes.isEmpty && bytes.count <= maxWorkerIDBytes
            && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }

    /// The shard key and content hash of a reference, or nil when a field is out of range. `needsHash`: the
    /// hash must be present (32 bytes); otherwise it may also be empty.
    public static func validate(_ ref: ClusterShardRef, needsHash: Bool) -> (key: ShardKey, sha256: [UInt8])? {
        guard ref.usecase.utf8.count <= maxUseCaseBytes, !ref.usecase.isEmpty,
              ref.configID.count <= maxConfigIDBytes, ref.shard < maxShardIndex,
              ref.sha256.count == 32 || (!needsHash && ref.sha256.isEmpty) else { return nil }
        return (ShardKey(ref), [UInt8](ref.sha256))
    }
}
