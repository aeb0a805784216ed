import LookupEngine
import Synchronization

/// The gate in front of a PIR request's costly work (routing, key fetch, compute, answer): at most `slots`
/// requests are past it at once, and the rest wait, the User-Identifiers served least lately first (`FairQueue`).
/// Without it every admitted request shares the CPU with every other, so a few flooding identities with a handful of
/// requests each stretched a phone's request to seconds; behind the gate the CPU is shared by `slots` requests and a
/// phone goes ahead of the flooding identities' turns, not behind their backlog. A request whose turn would come
/// after half of `maxWait` (the turns ahead of it times the measured time a request holds its slot) is refused at
/// once with 503 and `Retry-After`, as are the last waiting once a request placed ahead of them pushes them past it,
/// and one that finds the queue full with nobody to push out; one still waiting at `maxWait` is refused then.
public final class FairAdmission: Sendable {
    /// How many requests pass at once, how many wait, and for how long.
    public struct Limits: Sendable, Equatable {
        /// Requests past the gate at once.
        public var slots: Int
        /// Requests waiting at most; a newcomer then pushes out the last turn's request if its own turn would come
        /// before it, else it is refused.
        public var maxQueued: Int
        /// Longest wait for a slot; raised to twice the estimate's limit where requests hold their slots so long
        /// that a phone's pair behind one turn per slot would wait longer than half of it.
        public var maxWait: Duration
        /// The wait allowed unless configured: with the estimate at half of it, a lookup admitted under a flood is
        /// answered within about a second, while a phone among flooding identities waits for about one turn, so
        /// only a crowd or a flood is refused. At 900 ms the queue absorbs the bursts of Poisson arrivals at 70% of
        /// capacity, which 750 ms refused, and the admitted p99 under a 4× flood stays within about 0.7 s.
        public static let defaultMaxWait = Duration.milliseconds(900)

        /// Limits.
        public init(slots: Int, maxQueued: Int = 256, maxWait: Duration = Self.defaultMaxWait) {
            self.slots = max(slots, 1)
            self.maxQueued = max(maxQueued, 0)
            self.maxWait = maxWait
        }
    }

    /// Why a request was refused at the gate (the `reason` label of `callveil_admission_refusals_total`).
    public enum Refusal: String, Sendable, CaseIterable {
        /// Its turn would come after half of `maxWait` when it came.
        case estimate
        /// It was waiting when a request placed ahead of it pushed its turn past half of `maxWait`.
        case pushed
        /// The queue was full and its turn was the last.
        case full
        /// It waited `maxWait` without a turn.
        case timeout
    }

    /// Limits.
    public let limits: Limits
    private let metrics: ServiceMetrics?
    private let state = Mutex(State())

    struct State {
        var queue = FairQueue<Waiter>()
        var inUse = 0
        /// Mean time a request holds its slot.
        var hold = MeanHold()
        var refused: [Refusal: Int] = [:]
    }

    /// A gate with `limits`, starting from `hold` as the time a request holds its slot (measured from its first
    /// requests unless given); waits and refusals are recorded into `metrics`.
    package init(limits: Limits, metrics: ServiceMetrics? = nil, hold: MeanHold = MeanHold()) {
        self.limits = limits
        self.metrics = metrics
        state.withLock { $0.hold = hold }
    }

    /// Requests past the gate, waiting, refused so far by reason, and the mean time a request holds its slot once
    /// known (for metrics and tests).
    public var snapshot: (inUse: Int, waiting: Int, refused: [Refusal: Int], meanHold: Duration?) {
        state.withLock { ($0.inUse, $0.queue.count, $0.refused, $0.hold.trusted) }
    }

    /// Refuses `owner`'s request at once (503 with `Retry-After`) when its turn would come after half of `maxWait`
    /// now: the same estimate as at the gate, made before the request's token is verified and its body read, so that
    /// a flood's excess costs neither, and a phone refused under overload keeps its token.
    public func precheck(owner: String) throws {
        let refused = state.withLock { s -> Bool in
            guard s.inUse >= limits.slots || s.queue.count > 0, estimateExceeds(owner: owner, s) else { return false }
            count(.estimate, &s)
            return true
        }
        if refused { throw Self.error(.estimate) }
    }

    /// Whether `owner`'s turn, behind the turns ahead of it, would come after half of `maxWait`: the estimate follows
    /// the measured mean, so the queue it admits sits at its limit under a flood, and the other half absorbs the
    /// turns that run long instead of letting about half the admitted reach `maxWait` and be refused after all.
    /// A phone's lookup is two requests at once: an owner with nothing queued is admitted only with room for its
    /// second, and the second, arriving while the first waits, takes that room without a new estimate
    /// (`FairQueue.continuesPair`), so a flood does not keep the first of each pair and refuse its second. The turn
    /// first in line is never refused: it goes next, and refusing it would make room for nobody. The queue serves
    /// the owners served least lately first, so a phone among flooding identities goes ahead of their turns and is
    /// not refused for their backlog, while a crowd of fresh phones beyond what the wait allows is, at once. False
    /// until the mean hold is known.
    private func estimateExceeds(owner: String, _ s: State) -> Bool {
        if s.queue.continuesPair(of: owner) { return false }
        let ahead = s.queue.ahead(of: owner)
        let pair = s.queue.has(owner) ? 0 : FairQueue<Waiter>.groupTurns - 1
        guard ahead > 0, let wait = s.hold.wait(turns: ahead + pair + 1, slots: limits.slots) else { return false }
        return wait > estimateLimit(s.hold)
    }

    /// The latest turn the estimate admits: half of `maxWait`, but never less than the wait of a phone's pair behind
    /// one queued turn per slot. Where a request holds its slot longer than that budget allows (a CPU without the
    /// vector kernels, larger shards), a fixed half of `maxWait` would refuse every turn but the first in line: the
    /// queue would hold about one turn, admission would go to whoever reaches a free slot first, and a flood's many
    /// connections would take it from a phone retrying once a second.
    private func estimateLimit(_ hold: MeanHold) -> Duration {
        let half = limits.maxWait / 2
        guard let round = hold.wait(turns: limits.slots + FairQueue<Waiter>.groupTurns, slots: limits.slots)
        else { return half }
        return max(half, round)
    }

    /// How long a request queued now may wait before it is refused: `maxWait`, or twice the estimate's limit when
    /// that is longer, so that a turn the estimate admitted is not refused after all for the same slow holds.
    private func waitAllowed(_ hold: MeanHold) -> Duration {
        max(limits.maxWait, estimateLimit(hold) * 2)
    }

    /// Runs `body` once `owner` has a slot, then frees it; throws `LookupError` 503 with `Retry-After` when refused.
    public func admit<T>(owner: String, _ body: () async throws -> T) async throws -> T {
        let arrived = ContinuousClock.now
        try await enter(owner: owner)
        let start = ContinuousClock.now
        metrics?.recordStage(.admissionWait, start - arrived)
        defer { leave(held: .now - start) }
        return try await body()
    }

    private func enter(owner: String) async throws {
        let waiter = Waiter()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiter.attach(continuation)
                let queued = state.withLock { s -> Duration? in
                    if s.inUse < limits.slots && s.queue.count == 0 {
                        if waiter.resolve(.success(())) { s.inUse += 1 }  // not if its caller went away already
                        return nil
                    }
                    if estimateExceeds(owner: owner, s) {
                        refuse(waiter, .estimate, &s)
                        return nil
                    }
                    if s.queue.count >= limits.maxQueued {
                        guard let pushedOut = s.queue.pushOut(for: owner) else {
                            refuse(waiter, .full, &s)
                            return nil
                        }
                        refuse(pushedOut, .full, &s)
                    }
                    s.queue.append(waiter, owner: owner)
                    trimTail(&s)
                    return waitAllowed(s.hold)
                }
                if let queued { expire(waiter, owner: owner, after: queued) }
            }
        } onCancel: {
            state.withLock { s in
                if waiter.resolve(.failure(CancellationError())) { _ = s.queue.remove(owner: owner) { $0 === waiter } }
            }
        }
    }

    /// Refuses `waiter` at its own deadline, `wait` from now, if it is still waiting then. The refusal, its count
    /// and the waiter's leaving the queue happen under one lock, so whoever sees the refusal sees the gate's state
    /// after it.
    private func expire(_ waiter: Waiter, owner: String, after wait: Duration) {
        Task { [self] in
            try? await Task.sleep(for: wait)
            state.withLock { s in
                if waiter.resolve(.failure(Self.error(.timeout))) {
                    count(.timeout, &s)
                    _ = s.queue.remove(owner: owner) { $0 === waiter }
                }
            }
        }
    }

    /// Refuses at once the last turns that a request placed ahead of them has pushed past half of `maxWait` by the
    /// estimate, as they would have been refused had they come now: the queue holds the turns of the owners served
    /// least lately that fit, and a flood's turns are refused while young, not after waiting out the wait. The first
    /// in line is never refused.
    private func trimTail(_ s: inout State) {
        let limit = estimateLimit(s.hold)
        while s.queue.count > 1, let wait = s.hold.wait(turns: s.queue.count, slots: limits.slots), wait > limit,
              let last = s.queue.popLast() {
            refuse(last, .pushed, &s)
        }
    }

    /// Refuses `waiter` for `reason` and counts it, unless it was resolved already (its caller went away).
    private func refuse(_ waiter: Waiter, _ reason: Refusal, _ s: inout State) {
        if waiter.resolve(.failure(Self.error(reason))) { count(reason, &s) }
    }

    /// Counts a refusal, in the snapshot and the metric.
    private func count(_ reason: Refusal, _ s: inout State) {
        s.refused[reason, default: 0] += 1
        metrics?.increment("callveil_admission_refusals_total", dimensions: [("reason", reason.rawValue)])
    }

    private static func error(_ reason: Refusal) -> LookupError {
        switch reason {
        case .estimate, .pushed, .full: LookupError.unavailable("Too many requests ahead of this one; retry later", retryAfter: 1)
        case .timeout: LookupError.unavailable("No turn within the wait allowed; retry later", retryAfter: 1)
        }
    }

    /// A slot is free: it passes to the next waiter still waiting, in the queue's order.
    private func leave(held: Duration) {
        state.withLock { s in
            s.hold.add(held)
            while let next = s.queue.popFirst() {
                if next.resolve(.success(())) { return }  // the slot passes to it
            }
            s.inUse -= 1
        }
    }

    /// One request waiting for a slot: resolved once, by its turn, a refusal, or its caller going away.
    final class Waiter: Sendable {
        private struct Slot {
            var continuation: CheckedContinuation<Void, any Error>?
            var result: Result<Void, any Error>?
        }

        private let slot = Mutex(Slot())

        /// Hands over the continuation to resume; resumes it now if the waiter was resolved already.
        func attach(_ continuation: CheckedContinuation<Void, any Error>) {
            let early = slot.withLock { slot -> Result<Void, any Error>? in
                if let result = slot.result { return result }
                slot.continuation = continuation
                return nil
            }
            if let early { continuation.resume(with: early) }
        }

        /// Resolves with `result` unless resolved already; whether this call resolved it.
        @discardableResult
        func resolve(_ result: Result<Void, any Error>) -> Bool {
            let (won, continuation) = slot.withLock { slot -> (Bool, CheckedContinuation<Void, any Error>?) in
                guard slot.result == nil else { return (false, nil) }
                slot.result = result
                defer { slot.continuation = nil }
                return (true, slot.continuation)
            }
            continuation?.resume(with: result)
            return won
        }
    }
}
