import Synchronization

/// Where the coordinator keeps the desired state, so that it survives the process and, with a shared store,
/// several coordinators can follow one. The coordinator writes every change through and reads it at start.
public protocol DesiredStateStore: Sendable {
    /// The stored state, or nil when none was stored yet.
    func load() async throws -> DesiredState?
    /// Stores `state` unless a newer generation is stored already.
    func save(_ state: DesiredState) async throws
}

/// The embedded default: the desired state in this process's memory (a single coordinator re-derives it from
/// its service config at start).
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
}
