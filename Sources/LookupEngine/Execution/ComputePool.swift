import Dispatch
import PIR
import Synchronization
import Tracing

/// Runs homomorphic work off the Swift concurrency pool and the HTTP event loops: at most `width` jobs at a time, each
/// on a thread of its own (each job itself spreads over the PIR core's threads), the rest waiting in a bounded queue
/// per lane. A job waits without holding a thread; when its lane's queue is full it is refused at once
/// (`ComputePoolError.busy`, answered 503 with `Retry-After`), and a job whose deadline has passed or whose caller has
/// gone is dropped before it starts. Queries go first; key parsing runs on at most `keyWidth` slots, so a flood of key
/// uploads can slow lookups by at most that share and never queue in front of them. Within a lane, waiting jobs are
/// served by owner (the User-Identifier), the owners served least lately first (`FairQueue`), and a full queue makes
/// room for a newcomer by refusing the last turn if the newcomer's comes before it: a flood from a few users cannot
/// make one phone wait behind all of it. A query job that the jobs ahead of it (served in turn, at the mean time a
/// query holds its slot) would keep waiting past its deadline is refused at once (`deadlineUnreachable`, 503), not
/// queued to time out.
public final class ComputePool: Sendable {
    /// The width a process's pool has unless configured: 2, or 1 when the process may use one core (two queries
    /// time-sharing one core only make both late).
    public static var defaultWidth: Int { min(2, MulPirServer.coreCount) }

    /// What a job is, which decides its queue and its share of the slots.
    public enum Lane: Int, Sendable, CaseIterable {
        /// A PIR query (and installing a shard).
        case query
        /// Parsing and checking an evaluation key.
        case key

        /// The `lane` label of `callveil_compute_job_cpu_seconds`.
        public var label: String {
            switch self {
            case .query: "query"
            case .key: "key"
            }
        }
    }

    /// Queue bounds and the key lane's share.
    public struct Limits: Sendable, Equatable {
        /// Query jobs waiting at most (beyond: 503).
        public var queryQueue: Int
        /// Key jobs waiting at most (beyond: 503).
        public var keyQueue: Int
        /// Slots key jobs may take at once.
        public var keyWidth: Int
        /// Longest wait in the queue before a job is dropped (503), unless the caller gives its own deadline.
        public var queueTimeout: Duration

        /// Limits.
        public init(queryQueue: Int = 64, keyQueue: Int = 16, keyWidth: Int = 1, queueTimeout: Duration = .seconds(10)) {
            self.queryQueue = max(queryQueue, 0)
            self.keyQueue = max(keyQueue, 0)
            self.keyWidth = max(keyWidth, 1)
            self.queueTimeout = queueTimeout
        }
    }

    final class Job: Sendable {
        let lane: Lane
        let owner: String
        let deadline: ContinuousClock.Instant
        let enqueued = ContinuousClock.now
        /// The submitting request's trace context: the slot's thread has no task-local one.
        let context = ServiceContext.current
        /// Runs the work and returns what hands its result to the caller, so the pool's own accounting (the job's
        /// CPU, the hold time) is done before the caller goes on.
        let body: @Sendable () -> @Sendable () -> Void
        let fail: @Sendable (ComputePoolError) -> Void
        let cancelled = Atomic<Bool>(false)
        init(lane: Lane, owner: String, deadline: ContinuousClock.Instant, body: @escaping @Sendable () -> @Sendable () -> Void,
             fail: @escaping @Sendable (ComputePoolError) -> Void) {
            self.lane = lane
            self.owner = owner
            self.deadline = deadline
            self.body = body
            self.fail = fail
        }

        /// Why the job must not start now, if it must not: its caller went away, or it waited past its deadline.
        func dropReason(now: ContinuousClock.Instant) -> ComputePoolError? {
            if cancelled.load(ordering: .relaxed) { return .cancelled }
            return now > deadline ? .deadlinePassed : nil
        }
    }

    struct State {
        var waiting: [FairQueue<Job>] = Array(repeating: FairQueue(), count: Lane.allCases.count)
        var running: [Int] = Array(repeating: 0, count: Lane.allCases.count)
        /// The slots (indices into `queues`) no job holds.
        var free: [Int] = []
        var refused: [Int] = Array(repeating: 0, count: Lane.allCases.count)
        var expired = 0
        var cancelled = 0
        var unreachable = 0
        /// Mean time a query job holds its slot.
        var queryHold = MeanHold()

        mutating func count(_ reason: ComputePoolError) {
            switch reason.code {
            case .deadlinePassed: expired += 1
            case .cancelled: cancelled += 1
            default: break
            }
        }

        func queued(_ lane: Lane) -> Int { waiting[lane.rawValue].count }
        var runningTotal: Int { running.reduce(0, +) }
    }

    /// One serial queue per slot, each on a thread of its own (Dispatch's overcommit pool), not the default pool's
    /// threads, one per core, that also run every Swift task: a job there held the process's only thread for its
    /// whole computation, and a request's cheap steps (the gate's refusal, the token check) waited behind it.
    private let queues: [DispatchQueue]
    private let state = Mutex(State())
    /// Jobs allowed to run at once.
    public let width: Int
    /// Queue bounds.
    public let limits: Limits
    /// Where each job's wait for its slot is recorded (`queue_wait`, `key_queue_wait`).
    private let metrics: ServiceMetrics?

    /// A pool running `width` jobs at once.
    public init(width: Int, limits: Limits = Limits(), metrics: ServiceMetrics? = nil) {
        let width = max(width, 1)
        self.width = width
        self.metrics = metrics
        queues = (0..<width).map { DispatchQueue(label: "callveil.compute.\($0)") }
        state.withLock { $0.free = Array((0..<width).reversed()) }
        var limits = limits
        limits.keyWidth = min(limits.keyWidth, self.width)
        self.limits = limits
    }

    /// Runs `work` on the pool in `lane` for `owner` (whose jobs share its turns; nil: the anonymous owner) and returns
    /// its result; throws `ComputePoolError` when the lane's queue is full, the job waited past `deadline` (default:
    /// now + `limits.queueTimeout`), or the caller was cancelled before it started.
    public func run<T: Sendable>(lane: Lane = .query, owner: String? = nil, deadline: ContinuousClock.Instant? = nil,
                                 _ work: @escaping @Sendable () throws -> T) async throws -> T {
        let deadline = deadline ?? .now + limits.queueTimeout
        let box = Mutex<Job?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let body: @Sendable () -> @Sendable () -> Void = {
                    let result = Result { try work() }
                    return { continuation.resume(with: result) }
                }
                let job = Job(lane: lane, owner: owner ?? "", deadline: deadline, body: body,
                              fail: { continuation.resume(throwing: $0) })
                box.withLock { $0 = job }
                submit(job)
            }
        } onCancel: {
            box.withLock { $0 }?.cancelled.store(true, ordering: .relaxed)
        }
    }

    /// Jobs waiting and running per lane, and jobs refused, expired and dropped for a gone caller so far (for
    /// metrics and tests).
    public var snapshot: (queued: [Lane: Int], running: [Lane: Int], refused: [Lane: Int], expired: Int, cancelled: Int) {
        state.withLock { s in
            (Dictionary(uniqueKeysWithValues: Lane.allCases.map { ($0, s.queued($0)) }),
             Dictionary(uniqueKeysWithValues: Lane.allCases.map { ($0, s.running[$0.rawValue]) }),
             Dictionary(uniqueKeysWithValues: Lane.allCases.map { ($0, s.refused[$0.rawValue]) }), s.expired, s.cancelled)
        }
    }

    /// Query jobs refused at once because the queue ahead would outlast their deadline, and the mean time a query
    /// job holds its slot that the estimate uses (nil until enough jobs have run).
    public var admission: (unreachable: Int, meanService: Duration?) {
        state.withLock { s in
            (s.unreachable, s.queryHold.trusted)
        }
    }

    private func submit(_ job: Job) {
        enum Outcome { case start(slot: Int), queued(pushedOut: Job?), refused, unreachable }
        let outcome: Outcome = state.withLock { s in
            if canStart(job.lane, s) {
                s.running[job.lane.rawValue] += 1
                return .start(slot: s.free.removeLast())
            }
            // Refused now rather than queued to time out: the jobs ahead of it, served in turn by `width` slots,
            // would keep it waiting past its deadline.
            if job.lane == .query, let wait = s.queryHold.wait(of: job.owner, in: s.waiting[job.lane.rawValue], slots: width),
               ContinuousClock.now + wait > job.deadline {
                s.unreachable += 1
                return .unreachable
            }
            var pushedOut: Job?
            if s.queued(job.lane) >= (job.lane == .query ? limits.queryQueue : limits.keyQueue) {
                s.refused[job.lane.rawValue] += 1  // this job, or the one it pushes out
                pushedOut = s.waiting[job.lane.rawValue].pushOut(for: job.owner)
                guard pushedOut != nil else { return .refused }
            }
            s.waiting[job.lane.rawValue].append(job, owner: job.owner)
            return .queued(pushedOut: pushedOut)
        }
        switch outcome {
        case .start(let slot): launch(job, slot: slot)
        case .queued(let pushedOut): pushedOut?.fail(.busy(job.lane))
        case .refused: job.fail(.busy(job.lane))
        case .unreachable: job.fail(.deadlineUnreachable)
        }
    }

    private func canStart(_ lane: Lane, _ s: State) -> Bool {
        guard s.runningTotal < width else { return false }
        switch lane {
        case .query: return s.queued(.query) == 0
        case .key: return s.running[Lane.key.rawValue] < limits.keyWidth && s.queued(.query) == 0 && s.queued(.key) == 0
        }
    }

    /// Runs a job that holds `slot`, unless it must be dropped after all, then frees the slot.
    private func launch(_ job: Job, slot: Int) {
        queues[slot].async { [self] in
            if let reason = job.dropReason(now: .now) {  // cancelled since admission, or a deadline given already past
                state.withLock { $0.count(reason) }
                job.fail(reason)
            } else {
                let start = ContinuousClock.now
                metrics?.recordStage(job.lane == .query ? .queueWait : .keyQueueWait, start - job.enqueued, endingAt: start,
                                     context: job.context)
                MulPirServer.noteAllocatorActivity()
                let cpu = ThreadCPUTime.now()
                let deliver = job.body()
                metrics?.recordJobCPU(lane: job.lane.label, ThreadCPUTime.now() - cpu)
                MulPirServer.noteAllocatorActivity()
                if job.lane == .query {
                    let held = ContinuousClock.now - start
                    state.withLock { $0.queryHold.add(held) }
                }
                deliver()
            }
            finished(job.lane, slot: slot)
        }
    }

    /// `slot` is free: the next job takes it, queries first, keys within their share; expired or cancelled ones are
    /// dropped.
    private func finished(_ lane: Lane, slot: Int) {
        var dropped: [(Job, ComputePoolError)] = []
        let next: Job? = state.withLock { s in
            s.running[lane.rawValue] -= 1
            let now = ContinuousClock.now
            for candidate in [Lane.query, .key] {
                if candidate == .key && s.running[Lane.key.rawValue] >= limits.keyWidth { continue }
                while let job = s.waiting[candidate.rawValue].popFirst() {
                    guard let reason = job.dropReason(now: now) else {
                        s.running[candidate.rawValue] += 1
                        return job
                    }
                    s.count(reason)
                    dropped.append((job, reason))
                }
            }
            s.free.append(slot)
            return nil
        }
        for (job, error) in dropped { job.fail(error) }
        if let next { launch(next, slot: slot) }
    }
}

extension ComputePool {
    /// Runs `work` on a Dispatch thread outside the admission queues (installing a shard at reload must not be
    /// refused because lookups saturate the pool, nor block a thread of the concurrency pool). The threads are the
    /// utility-QoS pool's: seconds of work on the default pool's few threads (one per core) delayed the timers that
    /// wake sleeping tasks, and a worker's heartbeat ran 3 s late while it rebuilt shards.
    public static func detached<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .utility).async { continuation.resume(with: Result { try work() }) }
        }
    }
}
