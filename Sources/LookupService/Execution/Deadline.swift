import Synchronization

/// A deadline that holds even when the work ignores cancellation (a PostgreSQL query waits for its server's
/// answer whatever happens to the task that sent it): the work runs in a task of its own, and the caller is
/// answered by whichever comes first, the work's outcome, the deadline or the caller's cancellation. Work that
/// finishes after it was given up on hands its result to `discard` (close a connection that opened too late).
package enum Deadline {
    /// Returns `operation`'s result, or throws `expired()` once `timeout` has passed, or `CancellationError` as
    /// soon as the calling task is cancelled; never waits longer for `operation` than that.
    package static func run<T: Sendable>(_ timeout: Duration, expired: @escaping @Sendable () -> any Error,
                                         discard: @escaping @Sendable (T) async -> Void = { _ in },
                                         _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let waiter = Waiter<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                waiter.set(continuation)
                let timer = Task {
                    try? await Task.sleep(for: timeout)
                    if !Task.isCancelled { waiter.resume(with: .failure(expired())) }
                }
                Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await operation()) } catch { result = .failure(error) }
                    timer.cancel()
                    if !waiter.resume(with: result), case .success(let value) = result { await discard(value) }
                }
                // Cancelled before the continuation was stored: the handler found nothing to resume.
                if Task.isCancelled { waiter.resume(with: .failure(CancellationError())) }
            }
        } onCancel: {
            waiter.resume(with: .failure(CancellationError()))
        }
    }

    /// The one continuation of a `run`, resumed exactly once by whichever outcome comes first. It is stored
    /// before the work and the timer start, so only the cancellation handler can find it missing (and `run`
    /// checks for cancellation after storing it).
    private final class Waiter<T: Sendable>: Sendable {
        private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

        func set(_ value: CheckedContinuation<T, any Error>) {
            continuation.withLock { $0 = value }
        }

        /// Resumes the continuation with `result` unless an earlier outcome did; whether this one was delivered.
        @discardableResult
        func resume(with result: Result<T, any Error>) -> Bool {
            let taken = continuation.withLock { value -> CheckedContinuation<T, any Error>? in
                defer { value = nil }
                return value
            }
            taken?.resume(with: result)
            return taken != nil
        }
    }
}
