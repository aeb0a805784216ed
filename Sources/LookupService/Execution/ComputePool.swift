import Dispatch

/// Runs homomorphic work off the Swift concurrency pool and the HTTP event loops, at most `width` jobs at a
/// time (each job itself spreads over the PIR core's threads).
public final class ComputePool: Sendable {
    private let queue = DispatchQueue(label: "callveil.compute", attributes: .concurrent)
    private let slots: DispatchSemaphore
    /// Jobs allowed to run at once.
    public let width: Int

    /// A pool running `width` jobs at once.
    public init(width: Int) {
        self.width = max(width, 1)
        slots = DispatchSemaphore(value: self.width)
    }

    /// Runs `work` on the pool and returns its result.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [slots] in
                slots.wait()
                defer { slots.signal() }
                continuation.resume(with: Result { try work() })
            }
        }
    }
}
