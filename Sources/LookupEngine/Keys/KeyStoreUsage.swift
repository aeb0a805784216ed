/// What an evaluation-key store holds after a write, and how many keys that write evicted (oldest upload
/// first) to stay within the store's size limit. Read from counters, so reporting it costs no table scan.
public struct KeyStoreUsage: Sendable, Equatable {
    /// Stored keys, expired ones included until the maintenance purge removes them.
    public var keys: Int
    /// Total bytes of the stored serialized keys.
    public var bytes: Int
    /// Keys the write removed to make room.
    public var evicted: Int

    /// A usage report.
    public init(keys: Int, bytes: Int, evicted: Int = 0) {
        self.keys = keys
        self.bytes = bytes
        self.evicted = evicted
    }
}
