import Foundation
import Logging
import LookupService
import PostgresNIO
import ServiceTestSupport
import Testing

/// Leadership through a PostgreSQL advisory lock: never two leaders, takeover when the leader stops or its
/// session is killed, no leadership without the database.
@Suite("Leader lock")
struct LeaderLockTests {
    static let key: Int64 = 0x5445_5354

    /// Samples both locks every 20 ms for `duration`, failing if both lead at once; returns who led last.
    static func watch(_ locks: [PostgresLeaderLock], for duration: Duration) async throws -> [Bool] {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            #expect(locks.filter { $0.isLeader }.count <= 1, "two leaders at once")
            try await Task.sleep(for: .milliseconds(20))
        }
        return locks.map(\.isLeader)
    }

    @Test("One leader of two; the other takes over when the leader stops or its session is killed; none without the database")
    func takeover() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let logger = Logger(label: "test")
        // Checks every 500 ms (a lease of 1.5 s): the test suite runs in parallel on 2 cores, and a check that
        // starts late ends the lease as it would for a stalled process.
        let locks = [PostgresLeaderLock(settings: settings, key: Self.key, checkInterval: .milliseconds(500), logger: logger),
                     PostgresLeaderLock(settings: settings, key: Self.key, checkInterval: .milliseconds(500), logger: logger)]
        locks.forEach { $0.start() }
        #expect(try await timeUntil(within: .seconds(10)) { locks.contains { $0.isLeader } } != nil)
        _ = try await Self.watch(locks, for: .seconds(1))

        // The leader's session is killed on the server (a database restart, an operator): it steps down, and
        // leadership is held again by one of them within a few seconds.
        let leader = try #require(locks.firstIndex { $0.isLeader })
        try await TestPostgres.withConnection(to: settings) { admin in
            try await admin.query("""
                SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = \(Int64(Self.key & 0xffff_ffff))
                """, logger: logger)
        }
        let steppedDown = try await timeUntil(within: .seconds(5)) { !locks[leader].isLeader }
        #expect(steppedDown != nil, "the leader whose session was killed did not step down")
        let relead = try await timeUntil(within: .seconds(10)) { locks.contains { $0.isLeader } }
        #expect(relead != nil)
        _ = try await Self.watch(locks, for: .seconds(2))

        // The leader stops: the other takes over within a few seconds.
        _ = try await timeUntil(within: .seconds(10)) { locks.contains { $0.isLeader } }
        let current = try #require(locks.firstIndex { $0.isLeader })
        await locks[current].stop()
        let takeover = try await timeUntil(within: .seconds(10)) { locks[1 - current].isLeader }
        #expect(takeover != nil && takeover! < .seconds(5), "takeover after \(String(describing: takeover))")
        await locks[1 - current].stop()

        // Without the database no one leads.
        var unreachable = settings
        unreachable.port = 1
        let orphan = PostgresLeaderLock(settings: unreachable, key: Self.key, checkInterval: .milliseconds(500), logger: logger)
        orphan.start()
        try await Task.sleep(for: .seconds(1))
        #expect(!orphan.isLeader)
        await orphan.stop()
    }
}
