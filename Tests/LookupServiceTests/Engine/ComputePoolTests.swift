import Dispatch
import Foundation
import LookupEngine
import LookupService
import ServiceTestSupport
import Synchronization
import Testing

/// The compute pool's admission: bounded queues refuse at once, deadlines drop stale work before it starts,
/// queries go before key parsing, key parsing keeps to its share, and cancelled callers' work never runs.
@Suite("Compute pool admission")
struct ComputePoolTests {
    /// A job that holds its slot until `release` is signalled. Its own deadline is far off: with the pool's (100 ms
    /// in the deadline tests) a holder that started late on a busy machine was dropped, and the test waited forever
    /// for it to start.
    static func hold(_ pool: ComputePool, lane: ComputePool.Lane = .query, release: DispatchSemaphore, started: DispatchSemaphore? = nil)
        -> Task<Void, any Error> {
        Task {
            try await pool.run(lane: lane, deadline: .now + .seconds(60)) {
                started?.signal()
                release.wait()
            }
        }
    }

    /// A one-slot pool with `queryQueue` places whose slot is taken until `release` is signalled.
    static func heldPool(queryQueue: Int = 64, queueTimeout: Duration = .seconds(30)) async
        -> (pool: ComputePool, release: DispatchSemaphore, holder: Task<Void, any Error>) {
        let pool = ComputePool(width: 1, limits: .init(queryQueue: queryQueue, queueTimeout: queueTimeout))
        let release = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let holder = hold(pool, release: release, started: started)
        await wait(started)
        return (pool, release, holder)
    }

    /// A one-slot pool whose slot is taken (until `release`), and a job queued behind it that counts in `ran`
    /// (returned once the pool reports it queued: on a busy machine its task may start late).
    static func blockedJob(queueTimeout: Duration) async throws -> (pool: ComputePool, release: DispatchSemaphore,
                                                                    holder: Task<Void, any Error>, ran: Tally,
                                                                    waiting: Task<Void, any Error>) {
        let (pool, release, holder) = await heldPool(queueTimeout: queueTimeout)
        let ran = Tally()
        let waiting = Task { try await pool.run { ran.add() } }
        try await waitQueued(pool, .query, 1)
        return (pool, release, holder, ran, waiting)
    }

    /// Waits (off the concurrency pool) until `semaphore` is signalled; a wait of over 30 s fails the test instead of
    /// hanging it.
    static func wait(_ semaphore: DispatchSemaphore) async {
        let signalled = await offPool { semaphore.wait(timeout: .now() + 30) == .success }
        #expect(signalled, "a job the test waits for never started")
    }

    /// Polls until the pool reports `count` jobs queued in `lane`.
    static func waitQueued(_ pool: ComputePool, _ lane: ComputePool.Lane, _ count: Int) async throws {
        _ = try await eventually(seconds: 2.5) { pool.snapshot.queued[lane] == count }
        let queued = pool.snapshot.queued[lane]
        #expect(queued == count)
    }

    @Test("A full queue refuses at once; queued jobs run when the slot frees")
    func boundedQueue() async throws {
        let (pool, release, holder) = await Self.heldPool(queryQueue: 2)
        let queued = (0..<2).map { i in Task { try await pool.run { i } } }
        try await Self.waitQueued(pool, .query, 2)
        await #expect(throws: ComputePoolError.busy(.query)) { try await pool.run { 99 } }
        let refused = pool.snapshot.refused[.query]
        #expect(refused == 1)
        release.signal()
        try await holder.value
        let values = [try await queued[0].value, try await queued[1].value]
        #expect(values == [0, 1])
    }

    @Test("A job that waited past its deadline is dropped before it starts")
    func deadline() async throws {
        let (pool, release, holder, ran, late) = try await Self.blockedJob(queueTimeout: .milliseconds(100))
        try await Task.sleep(for: .milliseconds(300))
        release.signal()
        try await holder.value
        await #expect(throws: ComputePoolError.deadlinePassed) { try await late.value }
        let expired = pool.snapshot.expired
        #expect(ran.count == 0 && expired == 1)
    }

    @Test("Queries go before waiting key parsing; key parsing keeps to its share of the slots")
    func lanes() async throws {
        let pool = ComputePool(width: 2, limits: .init(keyWidth: 1, queueTimeout: .seconds(30)))
        let release = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let key = Self.hold(pool, lane: .key, release: release, started: started)
        await Self.wait(started)
        // One slot is free, but the key lane has its one slot: a second key waits, a query runs at once.
        let order = Order()
        let secondKey = Task { try await pool.run(lane: .key) { order.append("key") } }
        try await Self.waitQueued(pool, .key, 1)
        let queryRelease = DispatchSemaphore(value: 0), queryStarted = DispatchSemaphore(value: 0)
        let query = Self.hold(pool, release: queryRelease, started: queryStarted)
        await Self.wait(queryStarted)  // ran although a key was queued before it
        // Both slots busy: a query queued after the key still runs first.
        let laterQuery = Task { try await pool.run { order.append("query") } }
        try await Self.waitQueued(pool, .query, 1)
        queryRelease.signal()
        try await query.value
        try await laterQuery.value
        release.signal()
        try await key.value
        try await secondKey.value
        #expect(order.items == ["query", "key"])
    }

    @Test("A caller cancelled while its job waits: the job never runs")
    func cancellation() async throws {
        let (pool, release, holder, ran, waiting) = try await Self.blockedJob(queueTimeout: .seconds(30))
        waiting.cancel()
        release.signal()
        try await holder.value
        await #expect(throws: ComputePoolError.cancelled) { try await waiting.value }
        #expect(ran.count == 0)
    }

    @Test("Waiting jobs are served by owner, the least served lately first: one user's backlog does not delay another's job")
    func roundRobin() async throws {
        let (pool, release, holder) = await Self.heldPool(queryQueue: 16)
        let order = Order()
        var jobs: [Task<Void, any Error>] = []
        for i in 0..<6 {  // the flood's backlog, queued first
            jobs.append(Task { try await pool.run(owner: "flood") { order.append("flood\(i)") } })
            try await Self.waitQueued(pool, .query, i + 1)
        }
        jobs.append(Task { try await pool.run(owner: "phone") { order.append("phone") } })
        try await Self.waitQueued(pool, .query, 7)
        release.signal()
        try await holder.value
        for job in jobs { try await job.value }
        // The flood's first round is its first two; the phone, not served lately, goes ahead of its later rounds.
        #expect(order.items == ["flood0", "flood1", "phone", "flood2", "flood3", "flood4", "flood5"])
    }

    @Test("A full queue makes room for a new owner by refusing the last turn, the newest job of the owner that asked most")
    func pushOut() async throws {
        let (pool, release, holder) = await Self.heldPool(queryQueue: 3)
        var flood: [Task<Int, any Error>] = []
        for i in 0..<3 {
            flood.append(Task { try await pool.run(owner: "flood") { i } })
            try await Self.waitQueued(pool, .query, i + 1)
        }
        // The flood's own fourth job is refused: its turn would be the last.
        await #expect(throws: ComputePoolError.busy(.query)) { try await pool.run(owner: "flood") { 3 } }
        let phone = Task { try await pool.run(owner: "phone") { 100 } }
        await #expect(throws: ComputePoolError.busy(.query)) { try await flood[2].value }  // pushed out for the phone
        try await Self.waitQueued(pool, .query, 3)
        // A second phone job is refused: every queued turn comes before it (the flood's two left are its first round).
        await #expect(throws: ComputePoolError.busy(.query)) { try await pool.run(owner: "phone") { 101 } }
        release.signal()
        try await holder.value
        let values = [try await flood[0].value, try await flood[1].value, try await phone.value]
        #expect(values == [0, 1, 100])
    }

    @Test("Jobs computing in every slot leave the Swift tasks their threads: a task waiting for them wakes within milliseconds, not when they end")
    func jobsOffTheTaskThreads() async throws {
        // As many slots as the default Dispatch pool has threads (one per core), each computing for up to 3 s; on
        // those threads, every task would wait for the jobs to end.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let pool = ComputePool(width: cores, limits: .init(queryQueue: 0, queueTimeout: .seconds(60)))
        let spin = Spin()
        let jobs = (0..<cores).map { _ in
            Task {
                try await pool.run {
                    if spin.started.add(1, ordering: .relaxed).newValue == cores { spin.allStarted.withLock { $0 = .now } }
                    let end = ContinuousClock.now + .seconds(3)
                    while !spin.stop.load(ordering: .relaxed) && ContinuousClock.now < end {}
                }
            }
        }
        while spin.allStarted.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(5)) }
        let woke = ContinuousClock.now - spin.allStarted.withLock { $0 }!
        spin.stop.store(true, ordering: .relaxed)
        for job in jobs { try await job.value }
        #expect(woke < .milliseconds(500), "the test's task woke \(woke) after every slot started computing")
    }

    @Test("A job's CPU time is recorded by lane: a computing job's, not a sleeping one's wall time")
    func jobCPU() async throws {
        let metrics = ServiceMetrics()
        let pool = ComputePool(width: 1, metrics: metrics)
        try await pool.run {  // until it has used 50 ms of its thread's CPU, however busy the machine
            let start = ThreadCPUTime.now()
            while ThreadCPUTime.now() - start < .milliseconds(50) {}
        }
        try await pool.run(lane: .key) { Thread.sleep(forTimeInterval: 0.2) }
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(metricValue(text, "callveil_compute_job_cpu_seconds_count{lane=\"query\"}") == 1)
        #expect(metricValue(text, "callveil_compute_job_cpu_seconds_count{lane=\"key\"}") == 1)
        let computing = metricValue(text, "callveil_compute_job_cpu_seconds_sum{lane=\"query\"}")
        let sleeping = metricValue(text, "callveil_compute_job_cpu_seconds_sum{lane=\"key\"}")
        #expect(computing >= 0.045, "a job computing until 50 ms of its thread's CPU recorded \(computing) s")
        #expect(sleeping < 0.05, "a job sleeping for 200 ms recorded \(sleeping) s of CPU")
    }
}

/// Jobs that compute until told to stop: how many started, when the last did, and the stop.
final class Spin: Sendable {
    let started = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let allStarted = Mutex<ContinuousClock.Instant?>(nil)
}

/// Labels appended by concurrent jobs, in order.
final class Order: Sendable {
    private let list = Mutex<[String]>([])
    func append(_ item: String) { list.withLock { $0.append(item) } }
    var items: [String] { list.withLock { $0 } }
}
