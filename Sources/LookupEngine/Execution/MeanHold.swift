/// The mean time a job holds its slot (exponentially weighted, each new job a fifth of it), trusted once
/// `trustedAfter` jobs have run; and from it, how long an owner would wait for its turn in a `FairQueue` served by
/// a number of slots. The compute pool and the public port's fair gate both refuse at once by this estimate work
/// that would wait past its deadline.
package struct MeanHold: Sendable {
    /// Jobs that must have run before the mean is trusted.
    package static let trustedAfter = 8

    private var mean: Duration = .zero
    private var samples = 0

    /// No job yet.
    package init() {}

    /// A mean already trusted, as if `trustedAfter` jobs had each held their slot for `mean` (tests that must not
    /// depend on how long a sleep takes on a loaded machine).
    package init(trusted mean: Duration) {
        self.mean = mean
        samples = Self.trustedAfter
    }

    /// Counts one job that held its slot for `held`.
    package mutating func add(_ held: Duration) {
        mean = samples == 0 ? held : mean + (held - mean) * 0.2
        samples += 1
    }

    /// The mean, once trusted.
    package var trusted: Duration? { samples >= Self.trustedAfter ? mean : nil }

    /// How long the last of `turns` turns in line takes to be served by `slots` slots, one mean hold each; nil until
    /// the mean is trusted.
    package func wait(turns: Int, slots: Int) -> Duration? {
        trusted.map { $0 * (Double(turns) / Double(max(slots, 1))) }
    }

    /// How long an element `owner` appends now to `queue` would wait for one of `slots` slots: the elements ahead of
    /// it served in turn; nil until the mean is trusted.
    package func wait<Element>(of owner: String, in queue: FairQueue<Element>, slots: Int) -> Duration? {
        wait(turns: queue.ahead(of: owner) + 1, slots: slots)
    }
}
