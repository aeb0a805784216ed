import Foundation
import GRDB
import LookupEngine

/// Opens a SQLite database (WAL pool) for user secrets: the file and its directory are created if missing,
/// the file with owner-only permissions, and the schema is migrated. A writer waits up to 5 s for another
/// connection's write (another handle or process on the same file) instead of failing at once.
package enum SQLiteFile {
    package static func open(path: String, migrations: (inout DatabaseMigrator) -> Void) throws -> DatabasePool {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let pool = try DatabasePool(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrations(&migrator)
        try migrator.migrate(pool)
        return pool
    }
}
