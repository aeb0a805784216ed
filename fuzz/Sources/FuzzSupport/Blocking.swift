import Dispatch

/// Runs async work to completion from a harness's synchronous entry point (libFuzzer's thread, never the
/// concurrency pool), so each input is fully handled before the next.
public func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Result<T, any Error> {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    Task {
        do { box.value = .success(try await body()) } catch { box.value = .failure(error) }
        done.signal()
    }
    done.wait()
    return box.value!
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    var value: Result<T, any Error>?
}
