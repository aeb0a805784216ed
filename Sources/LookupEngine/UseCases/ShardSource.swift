import BFV
import PIR

/// One shard of a loaded version, read from disk (and checked) only when an executor asks for it, so installing a
/// version holds one shard's evaluation form at a time, never the whole version.
public struct ShardSource: Sendable {
    /// The shard's index in its version.
    public let index: Int
    private let read: @Sendable () throws -> ProcessedDatabase
    private let readPlaintexts: (@Sendable () throws -> [[Plaintext?]]?)?

    /// A source that reads shard `index` with `read`, and with `plaintexts` its coefficient-form plaintexts when
    /// its file stores them.
    public init(index: Int, read: @escaping @Sendable () throws -> ProcessedDatabase,
                plaintexts: (@Sendable () throws -> [[Plaintext?]]?)? = nil) {
        self.index = index
        self.read = read
        readPlaintexts = plaintexts
    }

    /// A source over a database already in memory.
    public init(index: Int, database: ProcessedDatabase) {
        self.init(index: index) { database }
    }

    /// Reads the shard's processed database (checking its file against the manifest where there is one).
    public func load() throws -> ProcessedDatabase { try read() }

    /// The shard's plaintexts in coefficient form, read and checked but not transformed, when its file stores them
    /// that way (a version-2 shard file); nil otherwise. A coordinator sends these to workers as they are.
    public func loadPlaintexts() throws -> [[Plaintext?]]? { try readPlaintexts?() }
}
