import Dispatch

/// Runs blocking work (waiting for a child process or a socket) on a Dispatch thread instead of one of Swift
/// concurrency's few pool threads: tests run in parallel on that pool, and a test that blocks it stalls every
/// other test's tasks, their deadlines and timeouts included.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: body()) }
    }
}

/// `offPool` for work that throws.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await offPool { Result { try body() } }.get()
}
