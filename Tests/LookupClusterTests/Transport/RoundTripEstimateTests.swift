import ClusterTransport
import Testing

@Suite("Round-trip estimate")
struct RoundTripEstimateTests {
    static let floor = Duration.milliseconds(200)
    static let ceiling = Duration.seconds(2)

    @Test("Before any sample the wait is 1 s, doubled per unanswered request up to the ceiling")
    func unmeasured() {
        let estimate = RoundTripEstimate()
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 0) == .seconds(1))
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 1) == .seconds(2))
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 5) == .seconds(2))
        #expect(estimate.timeout(floor: Self.floor, ceiling: .milliseconds(500), unanswered: 0) == .milliseconds(500))
    }

    @Test("Fast round trips wait the floor; the wait doubles per unanswered request and stops at the ceiling")
    func fastLink() {
        var estimate = RoundTripEstimate()
        for _ in 0..<20 { estimate.add(.milliseconds(3)) }
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 0) == .milliseconds(200))
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 1) == .milliseconds(400))
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 3) == .milliseconds(1600))
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 4) == .seconds(2))
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 1_000) == .seconds(2))
    }

    @Test("A slow, varying link waits its smoothed round trip plus four deviations")
    func slowLink() throws {
        var estimate = RoundTripEstimate()
        estimate.add(.milliseconds(400))
        // First sample: smoothed 400 ms, deviation 200 ms, so 400 + 4 × 200 = 1,200 ms.
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 0) == .milliseconds(1200))
        estimate.add(.milliseconds(800))
        // Deviation 0.75 × 200 + 0.25 × 400 = 250 ms; smoothed 0.875 × 400 + 0.125 × 800 = 450 ms: 1,450 ms.
        let smoothed = try #require(estimate.smoothed)
        #expect(abs(smoothed - 0.45) < 1e-9 && abs(estimate.variation - 0.25) < 1e-9)
        let wait = estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 0)
        #expect(wait > .milliseconds(1450) - .microseconds(1) && wait < .milliseconds(1450) + .microseconds(1))
        // A round trip longer than the ceiling still waits only the ceiling.
        estimate.add(.seconds(30))
        #expect(estimate.timeout(floor: Self.floor, ceiling: Self.ceiling, unanswered: 0) == .seconds(2))
    }
}
