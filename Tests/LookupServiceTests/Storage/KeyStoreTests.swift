import Foundation
import GRDB
import LookupEngine
import LookupService
import LookupStorage
import ServiceTestSupport
import Synchronization
import Testing

/// The evaluation-key stores, SQLite and PostgreSQL, with the same test bodies: replace on re-upload, timestamps
/// verbatim, expiry by age, durability, the size limit with oldest-first eviction and its counters.
@Suite("Evaluation-key store")
struct KeyStoreTests {
    @Test("Keys are replaced, expire after the maximum age, and persist across reopening", arguments: StoreBackend.allCases)
    func storeAndExpire(backend: StoreBackend) async throws {
        let database = try await backend.database()
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let clock: @Sendable () -> Date = { now.withLock { $0 } }
        let store = try await database.openKeyStore(maxAge: 3600, clock: clock)
        let id = [UInt8](repeating: 7, count: 32)
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 31) }
        try await store.store(.init(user: "u1", identifier: id, timestamp: UInt64.max - 1, uploadedAt: clock(), serialized: bytes))
        try await store.store(.init(user: "u2", identifier: id, timestamp: 5, uploadedAt: clock(), serialized: [1]))
        #expect(try await store.timestamp(user: "u1", identifier: id) == UInt64.max - 1)
        #expect(try await store.key(user: "u1", identifier: id)?.serialized == bytes)
        try await store.store(.init(user: "u2", identifier: id, timestamp: 6, uploadedAt: clock(), serialized: [2]))
        #expect(try await store.key(user: "u2", identifier: id)?.serialized == [2])
        #expect(try await store.count() == 2)
        #expect(try await store.timestamp(user: "u3", identifier: id) == nil)

        let reopened = try await database.openKeyStore(maxAge: 3600, batchSize: 1, clock: clock)
        #expect(try await reopened.timestamp(user: "u2", identifier: id) == 6)
        if case .sqlite(let directory) = database {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/keys.sqlite")
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }

        now.withLock { $0 = $0.addingTimeInterval(3601) }
        #expect(try await reopened.timestamp(user: "u1", identifier: id) == nil)
        #expect(try await reopened.key(user: "u2", identifier: id) == nil)
        #expect(try await reopened.count() == 0)
        #expect(try await reopened.purgeExpired() == 2)
    }

    @Test("Beyond its size limit the store evicts the keys uploaded longest ago, never the one just written",
          arguments: StoreBackend.allCases)
    func sizeLimitEvictsOldest(backend: StoreBackend) async throws {
        let database = try await backend.database()
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let clock: @Sendable () -> Date = { now.withLock { $0 } }
        let store = try await database.openKeyStore(maxAge: 3600, maxBytes: 3000, batchSize: 2, clock: clock)
        let id = [UInt8](repeating: 7, count: 32)
        func put(_ user: String, bytes: Int) async throws -> KeyStoreUsage {
            now.withLock { $0 = $0.addingTimeInterval(1) }
            return try await store.store(.init(user: user, identifier: id, timestamp: 1, uploadedAt: clock(),
                                               serialized: [UInt8](repeating: 1, count: bytes)))
        }
        #expect(try await put("u1", bytes: 1000) == KeyStoreUsage(keys: 1, bytes: 1000))
        #expect(try await put("u2", bytes: 1000) == KeyStoreUsage(keys: 2, bytes: 2000))
        #expect(try await put("u3", bytes: 1000) == KeyStoreUsage(keys: 3, bytes: 3000))
        // Re-uploading u1 makes it the newest; replacing a key changes the byte count, not the key count.
        #expect(try await put("u1", bytes: 500) == KeyStoreUsage(keys: 3, bytes: 2500))
        // 1,500 more bytes: u2 (now the oldest) goes; 4,000 → 3,000.
        #expect(try await put("u4", bytes: 1500) == KeyStoreUsage(keys: 3, bytes: 3000, evicted: 1))
        #expect(try await store.timestamp(user: "u2", identifier: id) == nil)
        // A key as large as the limit evicts everything else but is itself kept.
        #expect(try await put("u5", bytes: 3000) == KeyStoreUsage(keys: 1, bytes: 3000, evicted: 3))
        #expect(try await store.timestamp(user: "u5", identifier: id) == 1)
        // Purging and reopening keep the counters true.
        now.withLock { $0 = $0.addingTimeInterval(7200) }
        #expect(try await store.purgeExpired() == 1)
        #expect(try await database.openKeyStore(maxBytes: 3000).usage() == KeyStoreUsage(keys: 0, bytes: 0))
    }

    @Test("A store written before the usage counters is migrated with its keys counted")
    func countersMigration() async throws {
        let path = try temporaryDirectory() + "/old.sqlite"
        try KeyFileTests.writeFirstSchemaStore(path, keys: (0..<3).map { ("u\($0)", [1], [UInt8](repeating: 0, count: 100 * ($0 + 1))) })
        let store = try SQLiteEvaluationKeyStore(path: path)
        #expect(try await store.usage() == KeyStoreUsage(keys: 3, bytes: 600))
        try await store.store(.init(user: "u0", identifier: [1], timestamp: 2, uploadedAt: Date(), serialized: [1, 2]))
        #expect(try await store.usage() == KeyStoreUsage(keys: 3, bytes: 502))
    }
}
