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

    /// A one-slot gate allowing `maxWait`, its slot held by `owner` until `latch` opens. With `turn`, the gate takes a
    /// turn to last that long, as if measured: the estimate tests count turns, not how long a sleep takes on a
    /// loaded machine.
    static func heldGate(maxWait: Duration, turn: Duration? = nil, owner: String = "a", name: String = "a") async throws
        -> (FairAdmission, Order, Latch, Task<Void, any Error>) {
        let gate = FairAdmission(limits: .init(slots: 1, maxWait: maxWait), hold: turn.map { MeanHold(trusted: $0) } ?? MeanHold())
        let order = Order(), latch = Latch()
        let holder = request(gate, owner: owner, name: name, order: order, latch: latch)
        _ = try await eventually(seconds: 2.5) { order.all.count == 1 }
        return (gate, order, latch, holder)
    }

    static func waitWaiting(_ gate: FairAdmission, _ count: Int) async throws {
        _ = try await eventually(seconds: 2.5) { gate.snapshot.waiting == count }
        #expect(gate.snapshot.waiting == count)
    }

    @Test("A phone arriving behind a flooding identity's backlog is served after the flood's first two, not all")
    func phoneGetsItsTurn() async throws {
        let (gate, order, latch, holder) = try await Self.heldGate(maxWait: .seconds(30), owner: "flood", name: "flood-0")
        var tasks = [holder]
        for i in 1...4 {
            tasks.append(Self.request(gate, owner: "flood", name: "flood-\(i)", order: order, latch: latch))
            try await Self.waitWaiting(gate, i)
        }
        tasks.append(Self.request(gate, owner: "phone", name: "phone", order: order, latch: latch))
        try await Self.waitWaiting(gate, 5)
        latch.open()
        for task in tasks { try await task.value }
        // The flood's first two waiting were placed before the phone came, its next two after its first two: the phone
        // goes ahead of those.
        #expect(order.all == ["flood-0", "flood-1", "flood-2", "phone", "flood-3", "flood-4"])
        #expect(gate.snapshot.inUse == 0)
    }

    /// Expects `owner`'s request to be refused by the estimate at once, 503 with `Retry-After`.
    static func expectRefusedAtOnce(_ gate: FairAdmission, owner: String, _ why: String) async {
        let start = ContinuousClock.now
        do {
            try await gate.admit(owner: owner) {}
            Issue.record("\(owner) admitted although \(why)")
        } catch let error as LookupError {
            #expect(error.status == .serviceUnavailable)
            #expect(error.retryAfter != nil)
        } catch {
            Issue.record("\(owner): \(error)")
        }
        #expect(ContinuousClock.now - start < .milliseconds(50), "\(owner) refused only after \(ContinuousClock.now - start)")
        #expect(throws: LookupError.self) { try gate.precheck(owner: owner) }
    }

    @Test("A flooding identity's request whose turn would come too late is refused at once, 503 with Retry-After; a phone behind that backlog goes ahead of it, and the flood's last turn is refused")
    func refusedByEstimate() async throws {
        // Turns of 1 s; the estimate refuses past half of the 15 s allowed.
        let (gate, order, latch, holder) = try await Self.heldGate(maxWait: .seconds(15), turn: .seconds(1), owner: "flood", name: "flood-0")
        var tasks = [holder]
        // Seven more of the same identity wait: its next would come after eight turns.
        for i in 1...7 {
            tasks.append(Self.request(gate, owner: "flood", name: "flood-\(i)", order: order, latch: latch))
            try await Self.waitWaiting(gate, i)
        }
        await Self.expectRefusedAtOnce(gate, owner: "flood", "seven of its turns were ahead of it")
        #expect(gate.snapshot.refused[.estimate] == 2)
        // A phone not served lately goes ahead of the flood's backlog, after its first two (estimated at four turns with
        // its lookup's second request: within the limit). The flood's last turn, now the eighth, is past the limit and
        // refused.
        try gate.precheck(owner: "phone")
        tasks.append(Self.request(gate, owner: "phone", name: "phone", order: order, latch: latch))
        await #expect(throws: LookupError.self) { try await tasks[7].value }
        #expect(gate.snapshot.refused[.estimate] == 2)
        #expect(gate.snapshot.refused[.pushed] == 1)
        try await Self.waitWaiting(gate, 7)
        latch.open()
        for (i, task) in tasks.enumerated() where i != 7 { try await task.value }
        #expect(Array(order.all.prefix(4)) == ["flood-0", "flood-1", "flood-2", "phone"], "\(order.all)")
        #expect(gate.snapshot.inUse == 0)
    }

    @Test("A phone placed ahead of a flood's waiting turns pushes the last of them past the limit: they are refused at once, 503 with Retry-After, not left to wait out the wait")
    func floodTailRefusedAtOnce() async throws {
        // Turns of 1 s; the estimate refuses past half of the 9 s allowed.
        let (gate, order, latch, holder) = try await Self.heldGate(maxWait: .seconds(9), turn: .seconds(1), owner: "flood", name: "flood-0")
        var tasks = [holder]
        for i in 1...4 {  // the last waits four turns: within the limit
            tasks.append(Self.request(gate, owner: "flood", name: "flood-\(i)", order: order, latch: latch))
            try await Self.waitWaiting(gate, i)
        }
        let refused = Self.Order()
        for request in ["block", "identity"] {
            tasks.append(Self.request(gate, owner: "phone", name: "phone-\(request)", order: order, latch: latch))
            _ = try await eventually(seconds: 2.5) { gate.snapshot.refused[.pushed] == (request == "block" ? 1 : 2) }
            try await Self.waitWaiting(gate, 4)
        }
        // The phone's two went ahead of the flood's waiting turns, and the flood's last two were refused then.
        #expect(gate.snapshot.refused[.pushed] == 2)
        #expect(gate.snapshot.refused[.estimate] == nil)
        for (i, task) in tasks.enumerated() where i >= 3 && i <= 4 {
            do {
                try await task.value
                Issue.record("flood-\(i) was not refused")
            } catch let error as LookupError {
                #expect(error.status == .serviceUnavailable && error.retryAfter != nil)
                refused.add("flood-\(i)")
            }
        }
        #expect(refused.all == ["flood-3", "flood-4"])
        latch.open()
        for (i, task) in tasks.enumerated() where i < 3 || i > 4 { try await task.value }
        #expect(order.all == ["flood-0", "flood-1", "flood-2", "phone-block", "phone-identity"])
        #expect(gate.snapshot.refused[.timeout] == nil)
    }

    @Test("A crowd of phones, each lookup two requests, more than the wait allows: each phone is admitted with room for both, served together, and the newcomer is refused at once, not after waiting out the wait")
    func crowdRefusedAtOnce() async throws {
        // Turns of 1 s; the estimate refuses past half of the 9 s allowed.
        let (gate, order, latch, holder) = try await Self.heldGate(maxWait: .seconds(9), turn: .seconds(1), owner: "first", name: "first")
        var tasks = [holder]
        // Two phones' lookups wait: the second phone's first request is estimated at four turns with its second
        // (within the limit), and a third phone's at six.
        for p in 0..<2 {
            for request in ["block", "identity"] {
                tasks.append(Self.request(gate, owner: "phone-\(p)", name: "phone-\(p)-\(request)", order: order, latch: latch))
                try await Self.waitWaiting(gate, 2 * p + (request == "block" ? 1 : 2))
            }
        }
        await Self.expectRefusedAtOnce(gate, owner: "late", "two phones' lookups were ahead of it")
        #expect(gate.snapshot.refused[.estimate] == 2)
        #expect(gate.snapshot.refused[.timeout] == nil)
        latch.open()
        for task in tasks { try await task.value }
        #expect(order.all == ["first", "phone-0-block", "phone-0-identity", "phone-1-block", "phone-1-identity"])
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

    @Test("Turns longer than half the wait allows: a phone behind one turn is still queued, not refused, and waits past maxWait for its turn")
    func slowTurnsKeepTheQueue() async throws {
        // Turns of 1 s against 1 s allowed: half of it admits no turn behind another, which left admission to
        // whoever reached a free slot first. The estimate's floor (a pair behind one turn per slot: 3 s) queues the
        // phone, and it may wait twice that.
        let (gate, order, latch, holder) = try await Self.heldGate(maxWait: .seconds(1), turn: .seconds(1), owner: "flood", name: "flood-0")
        let flood = Self.request(gate, owner: "flood", name: "flood-1", order: order, latch: latch)
        try await Self.waitWaiting(gate, 1)
        try gate.precheck(owner: "phone")
        let phone = Self.request(gate, owner: "phone", name: "phone", order: order, latch: latch)
        try await Self.waitWaiting(gate, 2)
        try await Task.sleep(for: .milliseconds(1500))  // past maxWait
        #expect(gate.snapshot.waiting == 2)
        latch.open()
        for task in [holder, flood, phone] { try await task.value }
        #expect(order.all == ["flood-0", "flood-1", "phone"])
        #expect(gate.snapshot.refused.isEmpty, "\(gate.snapshot.refused)")
        #expect(gate.snapshot.inUse == 0)
    }
}
