import LookupStorage
import Synchronization

/// Where the coordinator keeps the desired state, so that it survives the process and, with a shared store,
/// several coordinators can follow one. The leading coordinator writes every change through; the others adopt
/// what is stored.
public protocol DesiredStateStore: Sendable {
    /// The stored state, or nil when none was stored yet.
    func load() async throws -> DesiredState?
    /// Stores `state`. A shared store refuses the write (`StoreError.fenced`) unless this process still leads.
    func save(_ state: DesiredState) async throws
    /// Whether this process decides placement now (called about twice a second; a shared store claims the
    /// leadership here when its lock was just taken). Exactly one of the coordinators sharing a store leads.
    func leads() async -> Bool
    /// Records the workers this coordinator sees with the shards each holds (for operators; nothing reads it back).
    func recordWorkers(_ workers: [String: Int]) async throws
    /// Stops taking part in the leadership (a shared store gives its lock up).
    func stop() async
}

extension DesiredStateStore {
    public func recordWorkers(_ workers: [String: Int]) async throws {}
    public func stop() async {}
}

/// The embedded default: the desired state in this process's memory (a single coordinator re-derives it from
/// its service config at start, and always leads).
public final class InMemoryDesiredStateStore: DesiredStateStore {
    private let stored = Mutex<DesiredState?>(nil)

    /// An empty store.
    public init() {}

    public func load() async throws -> DesiredState? { stored.withLock { $0 } }

    public func save(_ state: DesiredState) async throws {
        stored.withLock { current in
            if current.map({ $0.generation <= state.generation }) ?? true { current = state }
        }
    }

    public func leads() async -> Bool { true }
}
