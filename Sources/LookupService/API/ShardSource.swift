import PIR

/// One shard of a loaded version, read from disk (and checked) only when an executor asks for it, so installing a
/// version holds one shard's evaluation form at a time, never the whole version.
public struct ShardSource: Sendable {
    /// The shard's index in its version.
    public let index: Int
    private let read: @Sendable () throws -> ProcessedDatabase

    /// A source that reads shard `index` with `read`.
    public init(index: Int, read: @escaping @Sendable () throws -> ProcessedDatabase) {
        self.index = index
        self.read = read
    }

    /// A source over a database already in memory.
    public init(index: Int, database: ProcessedDatabase) {
        self.init(index: index) { database }
    }

    /// Reads the shard's processed database (checking its file against the manifest where there is one).
    public func load() throws -> ProcessedDatabase { try read() }
}
