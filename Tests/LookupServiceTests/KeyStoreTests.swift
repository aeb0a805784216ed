import Foundation
import LookupService
import ServiceTestSupport
import Synchronization
import Testing

/// The SQLite evaluation-key store: replace on re-upload, timestamps verbatim, expiry by age, durability.
@Suite("Evaluation-key store")
struct KeyStoreTests {
    @Test("Keys are replaced, expire after the maximum age, and persist across reopening")
    func storeAndExpire() async throws {
        let path = try temporaryDirectory() + "/keys.sqlite"
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let clock: @Sendable () -> Date = { now.withLock { $0 } }
        let store = try SQLiteEvaluationKeyStore(path: path, maxAge: 3600, clock: clock)
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

        let reopened = try SQLiteEvaluationKeyStore(path: path, maxAge: 3600, clock: clock)
        #expect(try await reopened.timestamp(user: "u2", identifier: id) == 6)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        now.withLock { $0 = $0.addingTimeInterval(3601) }
        #expect(try await reopened.timestamp(user: "u1", identifier: id) == nil)
        #expect(try await reopened.key(user: "u2", identifier: id) == nil)
        #expect(try await reopened.count() == 0)
        #expect(try await reopened.purgeExpired() == 2)
    }
}
