import Foundation
import GRDB
import LookupEngine
import LookupStorage
import ConformanceSupport
import ServiceTestSupport
import Testing

/// The SQLite key store keeps each key's bytes in a file of its own beside the database (read with one direct read on a
/// miss): the files follow the rows through replacement, eviction and expiry, keys stored in the database before stay
/// readable, and a write that fails or a process killed at any moment leaves the rows serving their keys, each with its
/// file, and no file without a row.
@Suite("SQLite key store: key files")
struct KeyFileTests {
    static let id = [UInt8](repeating: 3, count: 32)

    /// A key's bytes that name their user and version, so a read shows which write it came from.
    static func bytes(_ user: String, _ version: Int, count: Int = 70_000) -> [UInt8] {
        let seed = user.utf8.reduce(version &* 131) { $0 &* 31 &+ Int($1) }
        return (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 7) ^ seed ^ ($0 >> 8)) }
    }

    static func key(_ user: String, _ version: Int, count: Int = 70_000, at date: Date = Date()) -> StoredEvaluationKey {
        .init(user: user, identifier: id, timestamp: UInt64(version), uploadedAt: date, serialized: bytes(user, version, count: count))
    }

    /// Every file under the store's key-file directory, by name.
    static func files(_ path: String) throws -> Set<String> {
        let directory = path + "-blobs"
        let all = try FileManager.default.subpathsOfDirectory(atPath: directory)
        return Set(all.filter { $0.contains("/") }.map { String($0.split(separator: "/").last!) })
    }

    /// The rows' file names and sizes, the garbage list, and the usage counters, read straight from the database.
    static func rows(_ path: String) throws -> (files: [String: Int], inline: Int, garbage: Int, usage: (Int, Int)) {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var files: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT blob, size, length(key) FROM evaluation_keys WHERE blob IS NOT NULL") {
                files[row[0]] = row[1]
                #expect(row[2] as Int == 0, "a key in a file keeps no bytes in its row")
            }
            let inline = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM evaluation_keys WHERE blob IS NULL") ?? 0
            let garbage = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM key_blob_garbage") ?? -1
            let usage = try Row.fetchOne(db, sql: "SELECT keys, bytes FROM key_usage")!
            let total = try Int.fetchOne(db, sql: "SELECT IFNULL(SUM(IFNULL(size, length(key))), 0) FROM evaluation_keys") ?? -1
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM evaluation_keys") ?? -1
            #expect(usage[0] as Int == count && usage[1] as Int == total, "counters \(usage) against \(count) keys, \(total) bytes")
            return (files, inline, garbage, (count, total))
        }
    }

    /// A key store as the first schema wrote it (keys in the table, no usage counters, no files), to test migrations.
    static func writeFirstSchemaStore(_ path: String, keys: [(user: String, identifier: [UInt8], bytes: [UInt8])]) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1');
                CREATE TABLE evaluation_keys (user TEXT NOT NULL, identifier BLOB NOT NULL, timestamp INTEGER NOT NULL,
                    uploaded_at REAL NOT NULL, key BLOB NOT NULL, PRIMARY KEY (user, identifier));
                """)
            for key in keys {
                try db.execute(sql: "INSERT INTO evaluation_keys VALUES (?, ?, 1, ?, ?)",
                               arguments: [key.user, Data(key.identifier), Date().timeIntervalSince1970, Data(key.bytes)])
            }
        }
        try queue.close()
    }

    @Test("Keys live in owner-only files that follow replacement, eviction and expiry", arguments: [true, false])
    func filesFollowRows(direct: Bool) async throws {
        let path = try temporaryDirectory() + "/keys.sqlite"
        let now = Date()
        // Room for three keys: a fourth user's key evicts the oldest.
        let store = try SQLiteEvaluationKeyStore(path: path, maxAge: 3600, maxBytes: 3 * 70_000 + 1, directReads: direct,
                                                 clock: { now })
        for (index, user) in ["u1", "u2", "u3"].enumerated() {
            try await store.store(Self.key(user, 1, at: now.addingTimeInterval(Double(index) - 10)))
        }
        var rows = try Self.rows(path)
        #expect(rows.files.count == 3 && rows.files.values.allSatisfy { $0 == 70_000 } && rows.garbage == 0)
        #expect(try Self.files(path) == Set(rows.files.keys))
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "-blobs")
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        for name in rows.files.keys {
            let file = try FileManager.default.attributesOfItem(atPath: "\(path)-blobs/\(name.prefix(2))/\(name)")
            #expect((file[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }
        #expect(try await store.key(user: "u2", identifier: Self.id)?.serialized == Self.bytes("u2", 1))

        // A replacement of another size: the old file goes.
        try await store.store(Self.key("u2", 2, count: 4096, at: now.addingTimeInterval(-9.5)))
        #expect(try await store.key(user: "u2", identifier: Self.id)?.serialized == Self.bytes("u2", 2, count: 4096))
        rows = try Self.rows(path)
        #expect(try rows.files.count == 3 && Self.files(path) == Set(rows.files.keys))

        // A fourth user evicts u1, the oldest upload, and its file.
        let usage = try await store.store(Self.key("u4", 1, at: now))
        #expect(usage.evicted == 1)
        #expect(try await store.key(user: "u1", identifier: Self.id) == nil)
        #expect(try await store.key(user: "u4", identifier: Self.id)?.serialized == Self.bytes("u4", 1))
        rows = try Self.rows(path)
        #expect(try rows.files.count == 3 && Self.files(path) == Set(rows.files.keys))

        // Expiry deletes the expired keys' files.
        let later = try SQLiteEvaluationKeyStore(path: path, maxAge: 7, directReads: direct, clock: { now })
        #expect(try await later.purgeExpired() == 2)
        rows = try Self.rows(path)
        #expect(try rows.files.count == 1 && Self.files(path) == Set(rows.files.keys))
        #expect(try await later.key(user: "u4", identifier: Self.id)?.serialized == Self.bytes("u4", 1))
    }

    @Test("Keys stored in the database before the files stay readable and move to a file when replaced")
    func keysInTheDatabaseStillServe() async throws {
        let path = try temporaryDirectory() + "/old.sqlite"
        try Self.writeFirstSchemaStore(path, keys: ["u1", "u2"].map { ($0, Self.id, Self.bytes($0, 1)) })
        let store = try SQLiteEvaluationKeyStore(path: path)
        #expect(try await store.usage() == KeyStoreUsage(keys: 2, bytes: 140_000))
        #expect(try await store.key(user: "u1", identifier: Self.id)?.serialized == Self.bytes("u1", 1))
        try await store.store(Self.key("u1", 2, count: 10))
        #expect(try await store.key(user: "u1", identifier: Self.id)?.serialized == Self.bytes("u1", 2, count: 10))
        #expect(try await store.key(user: "u2", identifier: Self.id)?.serialized == Self.bytes("u2", 1))
        #expect(try await store.usage() == KeyStoreUsage(keys: 2, bytes: 70_010))
        let rows = try Self.rows(path)
        #expect(try rows.files.count == 1 && rows.inline == 1 && Self.files(path) == Set(rows.files.keys))
    }

    @Test("A key file that cannot be written fails the upload with the io code and leaves the previous key serving")
    func fileWriteFails() async throws {
        let path = try temporaryDirectory() + "/keys.sqlite"
        let store = try SQLiteEvaluationKeyStore(path: path)
        try await store.store(Self.key("u1", 1))
        // Every subdirectory a new file could go to is a plain file: creating the key's file fails.
        let existing = try Self.files(path)
        for prefix in (0..<256).map({ String(format: "%02x", $0) })
        where !FileManager.default.fileExists(atPath: "\(path)-blobs/\(prefix)") {
            #expect(FileManager.default.createFile(atPath: "\(path)-blobs/\(prefix)", contents: Data()) == true)
        }
        do {
            try await store.store(Self.key("u1", 2))
            Issue.record("the upload succeeded without a file")
        } catch let error as StoreError {
            #expect(error.code == .io, "\(error)")
        }
        #expect(try await store.key(user: "u1", identifier: Self.id)?.serialized == Self.bytes("u1", 1))
        var rows = try Self.rows(path)
        #expect(rows.garbage == 0 && Set(rows.files.keys) == existing)
        for prefix in (0..<256).map({ String(format: "%02x", $0) }) {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: "\(path)-blobs/\(prefix)", isDirectory: &isDirectory), !isDirectory.boolValue {
                try FileManager.default.removeItem(atPath: "\(path)-blobs/\(prefix)")
            }
        }
        try await store.store(Self.key("u1", 2))
        #expect(try await store.key(user: "u1", identifier: Self.id)?.serialized == Self.bytes("u1", 2))
        rows = try Self.rows(path)
        #expect(try rows.files.count == 1 && Self.files(path) == Set(rows.files.keys))
    }

    @Test("Failing to list the new file, the upload's first step, fails it and leaves the previous key and no file")
    func listingFails() async throws {
        let path = try temporaryDirectory() + "/keys.sqlite"
        let store = try SQLiteEvaluationKeyStore(path: path)
        try await store.store(Self.key("u1", 1))
        let before = try Self.rows(path)
        let injector = try DatabaseQueue(path: path)
        try await injector.write { db in
            try db.execute(sql: "CREATE TRIGGER injected BEFORE INSERT ON key_blob_garbage BEGIN SELECT RAISE(ABORT, 'injected'); END")
        }
        await #expect(throws: (any Error).self) { try await store.store(Self.key("u1", 2)) }
        #expect(try await store.key(user: "u1", identifier: Self.id)?.serialized == Self.bytes("u1", 1))
        let after = try Self.rows(path)
        #expect(try after.files == before.files && after.garbage == 0 && Self.files(path) == Set(before.files.keys))
        try await injector.write { db in try db.execute(sql: "DROP TRIGGER injected") }
        try await store.store(Self.key("u1", 2))
        #expect(try await store.key(user: "u1", identifier: Self.id)?.serialized == Self.bytes("u1", 2))
    }

    @Test("A replaced key's file that cannot be deleted after the commit stays listed: the new key serves, opening works")
    func deletionAfterCommitFails() async throws {
        let path = try temporaryDirectory() + "/keys.sqlite"
        let store = try SQLiteEvaluationKeyStore(path: path)
        try await store.store(Self.key("u1", 1))
        let old = try #require(try Self.rows(path).files.keys.first)
        // The old file becomes a non-empty directory: unlink fails (EISDIR) after the commit that replaces it.
        let oldPath = "\(path)-blobs/\(old.prefix(2))/\(old)"
        try FileManager.default.removeItem(atPath: oldPath)
        try FileManager.default.createDirectory(atPath: oldPath + "/inside", withIntermediateDirectories: true)
        try await store.store(Self.key("u1", 2))
        #expect(try await store.key(user: "u1", identifier: Self.id)?.serialized == Self.bytes("u1", 2))
        var rows = try Self.rows(path)
        #expect(rows.files.count == 1 && rows.files[old] == nil && rows.garbage == 1)
        // Opening again still works and serves the new key; the name stays listed until its file can go.
        let reopened = try SQLiteEvaluationKeyStore(path: path)
        #expect(try await reopened.key(user: "u1", identifier: Self.id)?.serialized == Self.bytes("u1", 2))
        #expect(try Self.rows(path).garbage == 1)
        try FileManager.default.removeItem(atPath: oldPath)
        _ = try SQLiteEvaluationKeyStore(path: path)
        rows = try Self.rows(path)
        #expect(try rows.garbage == 0 && Self.files(path) == Set(rows.files.keys))
    }

    @Test("A key file shorter or longer than its row says is reported corrupt, not served", arguments: [true, false])
    func wrongSizeIsCorrupt(direct: Bool) async throws {
        let path = try temporaryDirectory() + "/keys.sqlite"
        let store = try SQLiteEvaluationKeyStore(path: path, directReads: direct)
        try await store.store(Self.key("u1", 1, count: 8192))
        let name = try #require(try Self.rows(path).files.keys.first)
        let file = "\(path)-blobs/\(name.prefix(2))/\(name)"
        for size in [8191, 8193, 0] {
            try Data(Self.bytes("u1", 1, count: size)).write(to: URL(fileURLWithPath: file))
            do {
                _ = try await store.key(user: "u1", identifier: Self.id)
                Issue.record("a \(size)-byte file was served as an 8192-byte key")
            } catch let error as StoreError {
                #expect(error.code == .corrupt, "\(error)")
            }
        }
    }

    @Test("A damaged row's file name is refused as corrupt, and a listed name outside the directory deletes nothing")
    func damagedNamesStayInside() async throws {
        let directory = try temporaryDirectory()
        let path = directory + "/keys.sqlite"
        let store = try SQLiteEvaluationKeyStore(path: path)
        try await store.store(Self.key("u1", 1))
        let victim = directory + "/victim"
        #expect(FileManager.default.createFile(atPath: victim, contents: Data(Self.bytes("u1", 1))) == true)
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            // Both resolve to `victim` beside the database: <dir>/keys.sqlite-blobs/./ + ./../victim.
            try db.execute(sql: "UPDATE evaluation_keys SET blob = './../victim'")
            try db.execute(sql: "INSERT INTO key_blob_garbage (name) VALUES ('./../victim')")
        }
        try queue.close()
        do {
            _ = try await store.key(user: "u1", identifier: Self.id)
            Issue.record("a row naming a file outside the directory was served")
        } catch let error as StoreError {
            #expect(error.code == .corrupt, "\(error)")
        }
        _ = try SQLiteEvaluationKeyStore(path: path)  // opening collects the listed names
        #expect(FileManager.default.fileExists(atPath: victim))
        #expect(try Self.rows(path).garbage == 0)
    }

    @Test("Reads racing replacements of the same key get one whole version or the other, never an error")
    func readsRaceReplacements() async throws {
        let path = try temporaryDirectory() + "/keys.sqlite"
        let store = try SQLiteEvaluationKeyStore(path: path)
        try await store.store(Self.key("u1", 0, count: 20_000))
        let versions = 60
        let expected = (0...versions).map { Self.bytes("u1", $0, count: 20_000) }
        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                for version in 1...versions { try await store.store(Self.key("u1", version, count: 20_000)) }
                return 0
            }
            for _ in 0..<3 {
                group.addTask {
                    var reads = 0
                    var last = 0
                    while last < versions {
                        let key = try #require(try await store.key(user: "u1", identifier: Self.id))
                        last = Int(key.timestamp)
                        #expect(key.serialized == expected[last], "version \(last)")
                        reads += 1
                    }
                    return reads
                }
            }
            var reads = 0
            for try await count in group { reads += count }
            print("\(reads) reads across \(versions) replacements")
        }
        let rows = try Self.rows(path)
        #expect(try rows.files.count == 1 && Self.files(path) == Set(rows.files.keys))
    }

    #if os(Linux)
    @Test("A process killed at any moment of its uploads leaves every row with its whole file and no file without a row")
    func killedMidWrite() async throws {
        var generator = TestRandom()
        let path = try temporaryDirectory() + "/keys.sqlite"
        for round in 0..<6 {
            let delay = Int.random(in: 2_000...60_000, using: &generator)
            await #expect(processExitsWith: .signal(SIGKILL)) { [path = path as String, delay = delay as Int, round = round as Int] in
                // Room for three keys of five users: uploads replace and evict; a timer kills the process mid-way.
                let store = try SQLiteEvaluationKeyStore(path: path, maxBytes: 3 * 70_000 + 1)
                Thread.detachNewThread {
                    usleep(useconds_t(delay))
                    kill(getpid(), SIGKILL)
                }
                for version in 1... {
                    let user = "u\(version % 5)"
                    try await store.store(KeyFileTests.key(user, round * 1_000_000 + version))
                }
            }
            let rows = try Self.rows(path)
            let files = try Self.files(path)
            let store = try SQLiteEvaluationKeyStore(path: path, maxBytes: 3 * 70_000 + 1)
            let reopened = try Self.rows(path)
            print("round \(round), killed after \(delay) µs: \(rows.files.count) keys, \(files.count) files, \(rows.garbage) listed")
            // Before reopening: every row's file exists (listed files may be left over); after: exactly the rows' files.
            #expect(Set(rows.files.keys).isSubset(of: files))
            #expect(files.subtracting(rows.files.keys).count <= rows.garbage)
            #expect(try reopened.garbage == 0 && Self.files(path) == Set(reopened.files.keys))
            for user in (0..<5).map({ "u\($0)" }) {
                guard let key = try await store.key(user: user, identifier: Self.id) else { continue }
                #expect(key.serialized == Self.bytes(user, Int(key.timestamp)), "\(user) version \(key.timestamp)")
            }
            try await store.store(Self.key("u9", round))
            #expect(try await store.key(user: "u9", identifier: Self.id)?.serialized == Self.bytes("u9", round))
        }
    }
    #endif
}
