import Foundation
import Logging
import LookupService
import LookupStorage
import PostgresNIO
import ServiceTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

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

    /// Two started locks on a fresh database, once one of them leads. They check every 500 ms (a lease of
    /// 1.5 s): the test suite runs in parallel on 2 cores, and a check that starts late ends the lease as it would
    /// for a stalled process.
    static func twoLocks(logger: Logger) async throws -> (PostgresSettings, [PostgresLeaderLock]) {
        let settings = try await TestPostgres.freshDatabase()
        let locks = [PostgresLeaderLock(settings: settings, key: Self.key, checkInterval: .milliseconds(500), logger: logger),
                     PostgresLeaderLock(settings: settings, key: Self.key, checkInterval: .milliseconds(500), logger: logger)]
        locks.forEach { $0.start() }
        #expect(try await timeUntil(within: .seconds(30)) { locks.contains { $0.isLeader } } != nil)
        return (settings, locks)
    }

    @Test("One leader of two; the other takes over when the leader stops or its session is killed; none without the database")
    func takeover() async throws {
        let logger = Logger(label: "test")
        let (settings, locks) = try await Self.twoLocks(logger: logger)
        _ = try await Self.watch(locks, for: .seconds(1))

        // The leader's session is killed on the server (a database restart, an operator): it steps down, and
        // leadership is held again by one of them within a few seconds.
        // On a starved machine a late check can end the lease for a moment: wait until one of them leads again.
        _ = try await timeUntil(within: .seconds(30)) { locks.contains { $0.isLeader } }
        let leader = try #require(locks.firstIndex { $0.isLeader })
        try await TestPostgres.withConnection(to: settings) { admin in
            try await admin.query("""
                SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = \(Int64(Self.key & 0xffff_ffff))
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """, logger: logger)
        }
        let steppedDown = try await timeUntil(within: .seconds(30)) { !locks[leader].isLeader }
        #expect(steppedDown != nil, "the leader whose session was killed did not step down")
        let relead = try await timeUntil(within: .seconds(30)) { locks.contains { $0.isLeader } }
        #expect(relead != nil)
        _ = try await Self.watch(locks, for: .seconds(2))

        // The leader stops: the other takes over within a few seconds.
        _ = try await timeUntil(within: .seconds(30)) { locks.contains { $0.isLeader } }
        let current = try #require(locks.firstIndex { $0.isLeader })
        await locks[current].stop()
        // About one check interval on an idle machine; the bound is loose because the suite shares two cores.
        let takeover = try await timeUntil(within: .seconds(30)) { locks[1 - current].isLeader }
        #expect(takeover != nil, "no takeover after the leader stopped")
        print("leader lock: takeover \(String(describing: takeover)) after the leader stopped")
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

    /// The backend process that holds the test's advisory lock in `settings`' database, if any.
    static func holderPID(_ settings: PostgresSettings, logger: Logger) async throws -> Int32? {
        try await TestPostgres.withConnection(to: settings) { admin in
            let rows = try await admin.query("""
                SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = \(Int64(Self.key & 0xffff_ffff))
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """, logger: logger)
            for try await pid in rows.decode(Int32.self) { return pid }
            return nil
        }
    }

    @Test("A leader whose database backend stalls (SIGSTOP) steps down and stops without waiting for it; the other leads once the backend ends")
    func stalledBackend() async throws {
        let logger = Logger(label: "test")
        let (settings, locks) = try await Self.twoLocks(logger: logger)
        let leader = try #require(locks.firstIndex { $0.isLeader })
        let pid = try #require(try await Self.holderPID(settings, logger: logger))
        // The server is this test process's own (or an external one named by CALLVEIL_TEST_POSTGRES, whose
        // processes cannot be signalled: then there is nothing to test here).
        guard kill(pid, SIGSTOP) == 0 else {
            print("stalled backend: cannot signal PostgreSQL's backend \(pid) (external server?): skipped")
            for lock in locks { await lock.stop() }
            return
        }
        var continued = false
        defer { if !continued { kill(pid, SIGCONT) } }

        // Its checks get no answer: it steps down (within its lease, 1.5 s, on an idle machine; the bound here is
        // loose because the suite shares two cores) and gives the session up.
        let steppedDown = try await timeUntil(within: .seconds(30)) { !locks[leader].isLeader }
        #expect(steppedDown != nil, "the leader whose backend stalled did not step down")
        // No one leads while the stalled backend still holds the lock on the server.
        _ = try await Self.watch(locks, for: .seconds(1))
        #expect(!locks[1 - leader].isLeader)

        // Stopping does not wait for the stalled backend: stop() returns while the backend is still stopped
        // (a stop that waited for it would only return after the SIGCONT below).
        let stopped = Atomic(false)
        let stopping = Task { await locks[leader].stop(); stopped.store(true, ordering: .sequentiallyConsistent) }
        let stopTime = try await timeUntil(within: .seconds(30)) { stopped.load(ordering: .sequentiallyConsistent) }
        #expect(stopTime != nil, "stop() did not return while the backend was stalled")

        // The backend runs again, finds its client gone and ends: the lock is free and the other takes it.
        kill(pid, SIGCONT)
        continued = true
        await stopping.value
        let takeover = try await timeUntil(within: .seconds(30)) { locks[1 - leader].isLeader }
        #expect(takeover != nil, "no takeover after the stalled backend ended")
        print("stalled backend: stepped down after \(String(describing: steppedDown)), stop() in \(String(describing: stopTime)), "
              + "takeover \(String(describing: takeover)) after the backend resumed")
        await locks[1 - leader].stop()
    }
}
