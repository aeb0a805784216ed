import LoadGeneration
import Testing

/// The overload run's recovery verdict: a backlog after the flood delays recovery until its last slow lookup ends;
/// lone slow lookups among fast ones (the baseline's own tail) do not.
@Suite("Phone recovery after a flood")
struct PhoneRecoveryTests {
    /// A phone's lookups one after another from `start` (each 0.05 s after the last ended), each taking `latency`
    /// seconds unless `slow` says otherwise.
    private func lookups(_ count: Int, start: Double = 0, latency: Double = 0.06,
                         slow: [Int: Double] = [:]) -> [(start: Double, latency: Double)] {
        var out: [(start: Double, latency: Double)] = []
        var t = start
        for i in 0..<count {
            let l = slow[i] ?? latency
            out.append((start: t, latency: l))
            t += l + 0.05
        }
        return out
    }

    @Test("A backlog: recovered when its last slow lookup ends")
    func backlog() {
        let slow = Dictionary(uniqueKeysWithValues: (0..<8).map { ($0, 2.0 - 0.2 * Double($0)) })
        let phone = lookups(40, start: 50, slow: slow)
        let at = PhoneRecovery.recoveredAt(phone, threshold: 0.3)
        #expect(at == phone[7].start + phone[7].latency)
        #expect(at > 58)
    }

    @Test("Lone slow lookups among fast ones: recovered at the first lookup")
    func loneOutliers() {
        // The shape of a slow recovery on a busy CI machine: fast lookups, a few over twice the baseline's p99.
        let at = PhoneRecovery.recoveredAt(lookups(124, start: 50, slow: [30: 0.45, 34: 0.41, 70: 0.40, 121: 0.48]), threshold: 0.33)
        #expect(at == 50)
    }

    @Test("Three slow lookups of every five: not recovered until they stop; two of five are the tail")
    func intermittent() {
        var three: [Int: Double] = [:], two: [Int: Double] = [:]
        for i in 0..<100 where i % 5 < 3 { three[i] = 0.5 }
        for i in 0..<100 where i % 5 < 2 { two[i] = 0.5 }
        let phone = lookups(120, slow: three)
        #expect(PhoneRecovery.recoveredAt(phone, threshold: 0.3) == phone[97].start + phone[97].latency)
        #expect(PhoneRecovery.recoveredAt(lookups(120, slow: two), threshold: 0.3) == 0)
    }

    @Test("Failed lookups in a row never recover; no lookups never recover; fewer than five are one window")
    func failures() {
        let failed = PhoneRecovery.recoveredAt(lookups(30, slow: [10: .infinity, 11: .infinity, 12: .infinity]), threshold: 0.3)
        #expect(failed == .infinity)
        #expect(PhoneRecovery.recoveredAt([], threshold: 0.3) == .infinity)
        let few = lookups(3, slow: [0: 1, 1: 1])
        #expect(PhoneRecovery.recoveredAt(few, threshold: 0.3) == few[1].start + 1)
    }
}
