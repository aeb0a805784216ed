import Synchronization

/// A deadline that holds even when the work ignores cancellation (a PostgreSQL query waits for its server's
/// answer whatever happens to the task that sent it): the work runs in a task of its own, and the caller is
/// answered by whichever comes first, the work's outcome, the deadline or the caller's cancellation. Work given up
/// on is cancelled (what of it listens, such as waiting for a pooled connection, stops) and, if it still finishes
/// with a result, hands it to `discard` (close a connection that opened too late).
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
                    if !Task.isCancelled { waiter.giveUp(.failure(expired())) }
                }
                waiter.setWork(Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await operation()) } catch { result = .failure(error) }
                    timer.cancel()
                    if !waiter.resume(with: result), case .success(let value) = result { await discard(value) }
                })
                // Cancelled before the continuation was stored: the handler found nothing to resume.
                if Task.isCancelled { waiter.giveUp(.failure(CancellationError())) }
            }
        } onCancel: {
            waiter.giveUp(.failure(CancellationError()))
        }
    }

    /// The one continuation of a `run`, resumed exactly once by whichever outcome comes first, and the work's
    /// task. The continuation is stored before the work and the timer start, so only the cancellation handler can
    /// find it missing (and `run` checks for cancellation after storing it).
    private final class Waiter<T: Sendable>: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, work: Task<Void, Never>?,
                                   givenUp: Bool)>((nil, nil, false))

        func set(_ value: CheckedContinuation<T, any Error>) {
            state.withLock { $0.continuation = value }
        }

        /// Records the work's task; cancels it at once when the caller was already answered otherwise.
        func setWork(_ task: Task<Void, Never>) {
            let cancel = state.withLock { s -> Bool in
                s.work = task
                return s.givenUp
            }
            if cancel { task.cancel() }
        }

        /// Resumes the continuation with `result` unless an earlier outcome did; whether this one was delivered.
        @discardableResult
        func resume(with result: Result<T, any Error>) -> Bool {
            let taken = state.withLock { s -> CheckedContinuation<T, any Error>? in
                defer { s.continuation = nil }
                return s.continuation
            }
            taken?.resume(with: result)
            return taken != nil
        }

        /// Answers the caller with `result` (the deadline or cancellation) and cancels the work.
        func giveUp(_ result: Result<T, any Error>) {
            let (taken, work) = state.withLock { s -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?) in
                defer { s.continuation = nil }
                s.givenUp = true
                return (s.continuation, s.work)
            }
            taken?.resume(with: result)
            work?.cancel()
        }
    }
}
