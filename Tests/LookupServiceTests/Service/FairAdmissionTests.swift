import Foundation
import Hummingbird
import LookupEngine
import ServiceCore
import ServiceTestSupport
import Synchronization
import Testing

/// The public port's fair gate: a phone waits for one turn of each flooding identity, not for their backlog;
/// work that cannot get a turn within the wait allowed is refused at once with 503 and `Retry-After`; a request
/// that stops waiting gives its place back.
@Suite("Fair admission gate")
struct FairAdmissionTests {
    /// A latch a held request waits on until the test opens it.
    final class Latch: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { s in
                    if !s.open { s.waiters.append(continuation) }
                    return s.open
                }
                if open { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { s in
                s.open = true
                defer { s.waiters = [] }
                return s.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// The order requests got their slot in.
    final class Order: Sendable {
        private let names = Mutex<[String]>([])
        func add(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    /// Starts a request of `owner` that records `name` when it gets its slot, then holds it until `latch` opens.
    static func request(_ gate: FairAdmission, owner: String, name: String, order: Order, latch: Latch) -> Task<Void, any Error> {
        Task {
            try await gate.admit(owner: owner) {
                order.add(name)
                await latch.wait()
            }
        }
    }

    /// A one-slot gate allowing `maxWait`, its slot held by owner "a" until `latch` opens.
    static func heldGate(maxWait: Duration) async throws -> (FairAdmission, Order, Latch, Task<Void, any Error>) {
        let gate = FairAdmission(limits: .init(slots: 1, maxWait: maxWait))
        let order = Order(), latch = Latch()
        let holder = request(gate, owner: "a", name: "a", order: order, latch: latch)
        _ = try await eventually(seconds: 2.5) { order.all.count == 1 }
        return (gate, order, latch, holder)
    }

    static func waitWaiting(_ gate: FairAdmission, _ count: Int) async throws {
        _ = try await eventually(seconds: 2.5) { gate.snapshot.waiting == count }
        #expect(gate.snapshot.waiting == count)
    }

    @Test("A phone arriving behind a flooding identity's backlog is served after one of its requests, not all")
    func phoneGetsItsTurn() async throws {
        let gate = FairAdmission(limits: .init(slots: 1, maxWait: .seconds(30)))
        let order = Order(), latch = Latch()
        let holder = Self.request(gate, owner: "flood", name: "flood-0", order: order, latch: latch)
        _ = try await eventually(seconds: 2.5) { order.all.count == 1 }
        var tasks = [holder]
        for i in 1...4 {
            tasks.append(Self.request(gate, owner: "flood", name: "flood-\(i)", order: order, latch: latch))
            try await Self.waitWaiting(gate, i)
        }
        tasks.append(Self.request(gate, owner: "phone", name: "phone", order: order, latch: latch))
        try await Self.waitWaiting(gate, 5)
        latch.open()
        for task in tasks { try await task.value }
        #expect(order.all == ["flood-0", "flood-1", "phone", "flood-2", "flood-3", "flood-4"])
        #expect(gate.snapshot.inUse == 0)
    }

    @Test("A request of an identity already served whose turn would come too late is refused at once, 503 with Retry-After; a phone asking its one thing waits its turn")
    func refusedByEstimate() async throws {
        let gate = FairAdmission(limits: .init(slots: 1, maxWait: .seconds(3)))
        // Requests that each held the slot at least 300 ms: the gate now knows a turn's length.
        for _ in 0..<MeanHold.trustedAfter {
            try await gate.admit(owner: "warm") { try await Task.sleep(for: .milliseconds(300)) }
        }
        print("fair gate: mean hold after the warm-up \(String(describing: gate.snapshot.meanHold))")
        let order = Order(), latch = Latch()
        var tasks = [Self.request(gate, owner: "flood", name: "flood-0", order: order, latch: latch)]
        _ = try await eventually(seconds: 2.5) { order.all.count == 1 }
        // Twelve identities with one request each wait (an identity with nothing waiting or held is never refused by
        // the estimate): twelve turns of at least 300 ms, beyond the 3 s allowed, are ahead of anyone now.
        for i in 0..<12 {
            tasks.append(Self.request(gate, owner: "other-\(i)", name: "other-\(i)", order: order, latch: latch))
            try await Self.waitWaiting(gate, i + 1)
        }
        let start = ContinuousClock.now
        do {
            try await gate.admit(owner: "flood") {}
            Issue.record("admitted although twelve turns were ahead of it")
        } catch let error as LookupError {
            #expect(error.status == .serviceUnavailable)
            #expect(error.retryAfter != nil)
        }
        #expect(ContinuousClock.now - start < .milliseconds(50))
        #expect(throws: LookupError.self) { try gate.precheck(owner: "flood") }
        #expect(gate.snapshot.refused[.estimate] == 2)
        // A phone with nothing waiting or held is queued, not refused.
        try gate.precheck(owner: "phone")
        tasks.append(Self.request(gate, owner: "phone", name: "phone", order: order, latch: latch))
        try await Self.waitWaiting(gate, 13)
        latch.open()
        for task in tasks { try await task.value }
        #expect(order.all.last == "phone")
        #expect(gate.snapshot.inUse == 0)
    }

    @Test("A request still waiting when its wait runs out is refused then, 503 with Retry-After")
    func timeout() async throws {
        let (gate, _, latch, holder) = try await Self.heldGate(maxWait: .milliseconds(300))
        do {
            try await gate.admit(owner: "b") {}
            Issue.record("admitted while the slot was held")
        } catch let error as LookupError {
            #expect(error.status == .serviceUnavailable)
            #expect(error.retryAfter != nil)
        }
        #expect(gate.snapshot.refused[.timeout] == 1)
        #expect(gate.snapshot.waiting == 0)
        latch.open()
        try await holder.value
        #expect(gate.snapshot.inUse == 0)
    }

    @Test("A request whose caller leaves while it waits gives its place back, and the slot passes on")
    func cancel() async throws {
        let (gate, order, latch, holder) = try await Self.heldGate(maxWait: .seconds(60))
        let leaving = Self.request(gate, owner: "c", name: "c", order: order, latch: latch)
        try await Self.waitWaiting(gate, 1)
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        #expect(gate.snapshot.waiting == 0)
        let next = Self.request(gate, owner: "d", name: "d", order: order, latch: latch)
        try await Self.waitWaiting(gate, 1)
        latch.open()
        try await holder.value
        try await next.value
        #expect(order.all == ["a", "d"])
        #expect(gate.snapshot.inUse == 0)
    }
}
