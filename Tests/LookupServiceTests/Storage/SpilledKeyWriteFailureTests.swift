import Foundation
import GRDB
import LookupEngine
import LookupStorage
import ServiceTestSupport
import Testing

/// A key write that fails at each step of its transaction, the row, the usage counters and the eviction of older keys:
/// the store and a reopened one serve the previous version with counters that match it, the key file the write made is
/// gone, and the next write works. (The keys are larger than a connection's page cache, as keys stored in the database
/// by earlier versions were: their pages spilled to the WAL before the commit.)
@Suite("SQLite key store: failures while writing a spilled key")
struct SpilledKeyWriteFailureTests {
    static let id = [UInt8](repeating: 9, count: 32)
    /// A key's size: larger than a connection's page cache (`SQLiteFile.pageCacheKibibytes`).
    static let keyBytes = 600 << 10

    static func key(_ user: String, _ version: UInt8) -> StoredEvaluationKey {
        .init(user: user, identifier: id, timestamp: UInt64(version), uploadedAt: Date(),
              serialized: (0..<keyBytes).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(version)) })
    }

    @Test("Failing after the row, after the counters, or in the eviction leaves the previous keys and counters",
          arguments: ["AFTER UPDATE ON evaluation_keys", "AFTER UPDATE ON key_usage", "AFTER DELETE ON evaluation_keys"])
    func failedStep(trigger: String) async throws {
        let path = try temporaryDirectory() + "/keys.sqlite"
        // Room for two keys: a third user's key evicts the oldest.
        let open = { try SQLiteEvaluationKeyStore(path: path, maxBytes: 2 * Self.keyBytes + 1) }
        let store = try open()
        let (u1, u2) = (Self.key("u1", 1), Self.key("u2", 1))
        _ = try await store.store(u1)
        _ = try await store.store(u2)
        let before = try await store.usage()
        // Another connection adds the failure; the store's connections see the new schema.
        let injector = try DatabaseQueue(path: path)
        try await injector.write { db in try db.execute(sql: "CREATE TRIGGER injected \(trigger) BEGIN SELECT RAISE(ABORT, 'injected'); END") }
        let write = trigger.contains("DELETE") ? Self.key("u3", 2) : Self.key("u1", 2)
        await #expect(throws: (any Error).self) { _ = try await store.store(write) }
        // The failed write's key file is gone at once, not only when the store is next opened.
        let rows = try KeyFileTests.rows(path)
        #expect(try rows.files.count == 2 && rows.garbage == 0 && KeyFileTests.files(path) == Set(rows.files.keys))
        for (name, serving) in [("the same store", store), ("a reopened store", try open())] {
            #expect(try await serving.key(user: "u1", identifier: Self.id)?.serialized == u1.serialized, "\(name): u1")
            #expect(try await serving.key(user: "u2", identifier: Self.id)?.serialized == u2.serialized, "\(name): u2")
            #expect(try await serving.key(user: "u3", identifier: Self.id) == nil, "\(name): u3")
            let usage = try await serving.usage()
            #expect(usage.keys == before.keys && usage.bytes == before.bytes, "\(name): \(usage)")
        }
        try await injector.write { db in try db.execute(sql: "DROP TRIGGER injected") }
        _ = try await store.store(write)
        #expect(try await store.key(user: write.user, identifier: Self.id)?.serialized == write.serialized)
        let after = try await store.usage()
        #expect(after.keys == 2 && after.bytes == 2 * Self.keyBytes)
    }
}
