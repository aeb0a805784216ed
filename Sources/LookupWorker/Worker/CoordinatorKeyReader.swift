import Foundation
import LookupEngine
import Synchronization

/// How a worker reads evaluation keys: it asks the coordinator (fetch on miss) and keeps parsed keys in its LRU
/// cache, so the coordinator is asked once per key. Workers never write keys.
public final class CoordinatorKeyReader: EvaluationKeyReader {
    private struct Waiter {
        let continuation: CheckedContinuation<StoredEvaluationKey?, any Error>
        let user: String
        let identifier: [UInt8]
    }

    private let pending = Mutex<[UInt64: Waiter]>([:])
    private let nextID = Mutex<UInt64>(1)
    private let requestHandler: Mutex<@Sendable (UInt64, String, [UInt8]) -> Void>
    /// How long to wait for the coordinator.
    public let timeout: Duration

    /// A store that sends `request(id, user, identifier)` to the coordinator and is answered by `resolve`.
    public init(timeout: Duration = .seconds(5), request: @escaping @Sendable (UInt64, String, [UInt8]) -> Void) {
        self.timeout = timeout
        self.requestHandler = Mutex(request)
    }

    public func key(user: String, identifier: [UInt8]) async throws -> StoredEvaluationKey? {
        let id = nextID.withLock { id in
            defer { id += 1 }
            return id
        }
        let timeout = self.timeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.complete(id, .failure(EngineError(.unavailable, "Key fetch from the coordinator timed out")))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            pending.withLock { $0[id] = Waiter(continuation: continuation, user: user, identifier: identifier) }
            requestHandler.withLock { $0 }(id, user, identifier)
        }
    }

    /// How requests reach the coordinator (set once the worker's socket exists).
    public var sender: @Sendable (UInt64, String, [UInt8]) -> Void {
        get { requestHandler.withLock { $0 } }
        set { requestHandler.withLock { $0 = newValue } }
    }

    /// Delivers the coordinator's answer to request `id`.
    public func resolve(_ id: UInt64, found: Bool, timestamp: UInt64, key: [UInt8], uploadedAt: Double) {
        guard let waiter = pending.withLock({ $0.removeValue(forKey: id) }) else { return }
        waiter.continuation.resume(returning: found ? StoredEvaluationKey(user: waiter.user, identifier: waiter.identifier,
                                                                          timestamp: timestamp, uploadedAt: Date(timeIntervalSince1970: uploadedAt),
                                                                          serialized: key) : nil)
    }

    private func complete(_ id: UInt64, _ result: Result<StoredEvaluationKey?, any Error>) {
        pending.withLock { $0.removeValue(forKey: id) }?.continuation.resume(with: result)
    }
}
