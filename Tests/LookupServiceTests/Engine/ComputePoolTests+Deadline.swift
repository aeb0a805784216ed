import Dispatch
import Foundation
import LookupEngine
import ServiceTestSupport
import Testing

/// Admission by deadline: a query the queue ahead would keep past its deadline is refused at once.
extension ComputePoolTests {
    @Test("A query the jobs ahead would keep past its deadline is refused at once, not queued to time out; another owner's fits in")
    func unreachableDeadline() async throws {
        let pool = ComputePool(width: 1, limits: .init(queryQueue: 64, queueTimeout: .seconds(1)))
        // Jobs of 100 ms teach the pool how long a query holds its slot.
        for _ in 0..<8 { try await pool.run { Thread.sleep(forTimeInterval: 0.1) } }
        #expect(try await eventually { pool.admission.meanService != nil })  // recorded once the slot is free
        let mean = try #require(pool.admission.meanService)
        #expect(mean > .milliseconds(80) && mean < .milliseconds(300), "mean \(mean)")
        let (release, started) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let holder = Self.hold(pool, release: release, started: started)
        await Self.wait(started)

        /// A job of 100 ms for `owner`: whether it ran, or the instant it was refused or dropped, and why.
        func job(_ owner: String) -> Task<(ran: Bool, refusedAt: ContinuousClock.Instant?, code: ComputePoolError.Code?), Never> {
            Task {
                do {
                    try await pool.run(owner: owner) { Thread.sleep(forTimeInterval: 0.1) }
                    return (true, nil, nil)
                } catch let error as ComputePoolError {
                    return (false, .now, error.code)
                } catch {
                    return (false, .now, nil)
                }
            }
        }
        // One owner's jobs queue while they would start within the deadline (about 10 of 100 ms in 1 s); the first
        // that would not is refused at once.
        var admitted: [Task<(ran: Bool, refusedAt: ContinuousClock.Instant?, code: ComputePoolError.Code?), Never>] = []
        var refusal: Duration?
        for _ in 0..<20 {
            let start = ContinuousClock.now
            let flood = job("flood")
            #expect(try await eventually(seconds: 5) { pool.snapshot.queued[.query] == admitted.count + 1 || pool.admission.unreachable == 1 })
            if pool.admission.unreachable == 1 {
                let outcome = await flood.value
                #expect(outcome.code == .deadlineUnreachable)
                refusal = outcome.refusedAt.map { $0 - start }
                break
            }
            admitted.append(flood)
        }
        // The phone's job would wait behind one of the flood's, not all of them: it is admitted.
        let phone = job("phone")
        try await Self.waitQueued(pool, .query, admitted.count + 1)
        release.signal()
        try await holder.value
        #expect(admitted.count >= 6 && admitted.count <= 11, "\(admitted.count) admitted before the first refusal")
        let refusedAfter = try #require(refusal, "no job was refused")
        #expect(refusedAfter < .milliseconds(50), "refused after \(refusedAfter)")
        #expect(await phone.value.ran)
        // Admitted work runs; the phone's turn may push the flood's last admitted job past its deadline, no more.
        var ran = 0
        for flood in admitted where await flood.value.ran { ran += 1 }
        #expect(ran >= admitted.count - 1, "\(ran) of \(admitted.count) admitted ran")
        #expect(pool.admission.unreachable == 1)
    }
}
