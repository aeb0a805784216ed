import Foundation
import GRDB
import LookupEngine

/// Opens a SQLite database (WAL pool) for user secrets: the file and its directory are created if missing,
/// the file with owner-only permissions, and the schema is migrated. A writer waits up to 5 s for another
/// connection's write (another handle or process on the same file) instead of failing at once.
package enum SQLiteFile {
    /// The page cache each connection keeps at most. SQLite's default is 2 MiB per connection, and a pool has a
    /// writer and up to five readers, so a store of 600 KB evaluation keys read once per parsed-key cache miss
    /// kept up to 12 MiB of pages that the kernel's page cache holds anyway; 256 KiB still holds the B-tree's
    /// inner pages and a nonce table's hot leaves.
    package static let pageCacheKibibytes = 256

    package static func open(path: String, migrations: (inout DatabaseMigrator) -> Void) throws -> DatabasePool {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA cache_size = -\(pageCacheKibibytes)") }
        let pool = try DatabasePool(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrations(&migrator)
        try migrator.migrate(pool)
        return pool
    }
}
