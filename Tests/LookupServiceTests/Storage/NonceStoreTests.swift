import Foundation
import GRDB
import LookupService
import LookupStorage
import ServiceTestSupport
import Testing

/// The spent-nonce stores, SQLite and PostgreSQL, with the same test bodies: atomic spending (also from two
/// handles at once, as two coordinators), a cap per issuer key, and forgetting a retired key's nonces.
@Suite("Nonce store")
struct NonceStoreTests {
    static func nonce(_ i: Int) -> [UInt8] { [UInt8](repeating: UInt8(i & 0xff), count: 31) + [UInt8(i >> 8)] }

    @Test("Per-key forgetting (empty and non-empty key lists) and a cap per key", arguments: StoreBackend.allCases)
    func forgetAndCap(backend: StoreBackend) async throws {
        let database = try await backend.database()
        let a = [UInt8](repeating: 0xA1, count: 32), b = [UInt8](repeating: 0xB2, count: 32)
        let store = try await database.openNonceStore(maxPerKey: 5)
        for i in 0..<5 { #expect(try await store.spend(nonce: Self.nonce(i), keyID: a)) }
        for i in 0..<3 { #expect(try await store.spend(nonce: Self.nonce(i), keyID: b)) }
        #expect(try await !store.spend(nonce: Self.nonce(1), keyID: b))  // double spend
        await #expect(throws: NonceStoreFull.self) { try await store.spend(nonce: Self.nonce(9), keyID: a) }  // a is full
        #expect(try await store.count() == 8)
        #expect(try await store.forget(keyIDsNotIn: [a]) == 3)  // b retired: its table dropped
        #expect(try await store.count() == 5)
        #expect(try await !store.spend(nonce: Self.nonce(0), keyID: a))  // a's nonces kept
        #expect(try await store.spend(nonce: Self.nonce(0), keyID: b))  // b starts afresh (its tokens are refused before this anyway)
        #expect(try await store.forget(keyIDsNotIn: []) == 6)  // no key accepted: everything forgotten
        #expect(try await store.count() == 0)
        #expect(try await store.spend(nonce: Self.nonce(0), keyID: a))
        // Malformed ids and nonces are refused, not stored.
        #expect(try await !store.spend(nonce: [1, 2, 3], keyID: a))
        #expect(try await !store.spend(nonce: Self.nonce(7), keyID: [1]))
        // A second handle (a restart, or another coordinator) sees the same nonces.
        let other = try await database.openNonceStore(maxPerKey: 5)
        #expect(try await !other.spend(nonce: Self.nonce(0), keyID: a))
        #expect(try await other.count() == 1)
    }

    @Test("Of one nonce spent at the same moment through two handles, exactly one spend succeeds (100 trials)",
          arguments: StoreBackend.allCases)
    func concurrentSpendsOnce(backend: StoreBackend) async throws {
        let database = try await backend.database()
        let first = try await database.openNonceStore(), second = try await database.openNonceStore()
        let key = [UInt8](repeating: 0xC3, count: 32)
        // The first spend of a key creates its table or partition: done by both handles at once too.
        var wins = 0
        for trial in 0..<100 {
            let nonce = (0..<32).map { _ in UInt8.random(in: 0...255) }
            async let a = first.spend(nonce: nonce, keyID: key)
            async let b = second.spend(nonce: nonce, keyID: key)
            let (x, y) = try await (a, b)
            #expect(x != y, "trial \(trial): both or neither spend succeeded")
            wins += (x ? 1 : 0) + (y ? 1 : 0)
        }
        #expect(wins == 100)
        #expect(try await first.count() == 100)
    }

    @Test("Two handles forgetting the same retired keys at once both succeed, and the keys are gone",
          arguments: StoreBackend.allCases)
    func concurrentForget(backend: StoreBackend) async throws {
        let database = try await backend.database()
        let first = try await database.openNonceStore(), second = try await database.openNonceStore()
        let live = [UInt8](repeating: 0x11, count: 32)
        // Enough retired keys that the two handles detach different keys' partitions at the same time (PostgreSQL
        // allows one pending detach per table).
        let retired = (0..<12).map { [UInt8](repeating: UInt8(0x20 + $0), count: 32) }
        for (index, key) in ([live] + retired).enumerated() {
            for i in 0..<3 { #expect(try await first.spend(nonce: Self.nonce(index * 10 + i), keyID: key)) }
        }
        async let a = first.forget(keyIDsNotIn: [live])
        async let b = second.forget(keyIDsNotIn: [live])
        let (forgottenA, forgottenB) = try await (a, b)
        #expect(forgottenA + forgottenB >= 36)
        #expect(try await first.count() == 3)
        #expect(try await !second.spend(nonce: Self.nonce(0), keyID: live))
        #expect(try await second.spend(nonce: Self.nonce(10), keyID: retired[0]))  // a forgotten key starts afresh
    }

    @Test("A SQLite store written by the one-table schema is migrated with its nonces")
    func sqliteMigration() async throws {
        let directory = try temporaryDirectory()
        let a = [UInt8](repeating: 0xA1, count: 32), b = [UInt8](repeating: 0xB2, count: 32)
        let old = "\(directory)/old.sqlite"
        let queue = try DatabaseQueue(path: old)
        try await queue.write { db in
            try db.execute(sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1');
                CREATE TABLE spent_nonces (nonce BLOB PRIMARY KEY NOT NULL, key_id BLOB NOT NULL, spent_at REAL NOT NULL) WITHOUT ROWID;
                """)
            for i in 0..<4 { try db.execute(sql: "INSERT INTO spent_nonces VALUES (?, ?, 0)", arguments: [Data(Self.nonce(i)), Data(i < 3 ? a : b)]) }
        }
        try queue.close()
        let migrated = try SQLiteNonceStore(path: old)
        #expect(try await migrated.count() == 4)
        #expect(try await !migrated.spend(nonce: Self.nonce(2), keyID: a))
        #expect(try await !migrated.spend(nonce: Self.nonce(3), keyID: b))
        #expect(try await migrated.spend(nonce: Self.nonce(3), keyID: a))
    }
}
