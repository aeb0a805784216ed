import BFV
import PIR

/// One shard of a loaded version, read from disk (and checked) only when an executor asks for it, so installing a
/// version holds one shard's evaluation form at a time, never the whole version.
public struct ShardSource: Sendable {
    /// The shard's index in its version.
    public let index: Int
    private let read: @Sendable () throws -> ProcessedDatabase
    private let readFile: (@Sendable () throws -> [UInt8]?)?
    private let fileSHA256: [UInt8]?

    /// A source that reads shard `index` with `read`, and with `file` its version-2 shard file's bytes when it has
    /// one; `fileSHA256` is those bytes' SHA-256 when it is known without reading them (a manifest records it, and
    /// `file` checks the bytes against it).
    public init(index: Int, read: @escaping @Sendable () throws -> ProcessedDatabase, file: (@Sendable () throws -> [UInt8]?)? = nil,
                fileSHA256: [UInt8]? = nil) {
        self.index = index
        self.read = read
        readFile = file
        self.fileSHA256 = fileSHA256
    }

    /// A source over a database already in memory.
    public init(index: Int, database: ProcessedDatabase) {
        self.init(index: index) { database }
    }

    /// Reads the shard's processed database (checking its file against the manifest where there is one).
    public func load() throws -> ProcessedDatabase { try read() }

    /// The shard's file as it is on disk (checked against its manifest's hash where there is one) when it is a
    /// version-2 `.cvshard`; nil otherwise. A coordinator sends these bytes to workers as they are.
    public func loadFile() throws -> [UInt8]? { try readFile?() }

    /// The shard as a version-2 shard file: its file as it is, or (for a shard held only in evaluation form) the
    /// database packed back into one; what a coordinator sends to its workers.
    /// `sha256` is the file's SHA-256 when the manifest gave it (nil: the caller hashes the bytes).
    public func shardFile(parameterBlob: [UInt8], context: Context) throws -> (bytes: [UInt8], sha256: [UInt8]?) {
        if let file = try loadFile() { return (file, fileSHA256) }
        return (try ShardFile.serialize(try load(), parameterBlob: parameterBlob, context: context), nil)
    }
}
