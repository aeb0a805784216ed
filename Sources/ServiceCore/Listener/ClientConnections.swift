import NIOCore
import Synchronization

/// The open client connections of a listener, each with a `ClientConnection` that says when its client went away,
/// so that the responder can cancel work for a client that can no longer receive the answer.
public final class ClientConnections: Sendable {
    private let open = Mutex<[ObjectIdentifier: ClientConnection]>([:])

    /// An empty registry.
    public init() {}

    /// The connection of `channel`, while it is open.
    public func connection(of channel: any Channel) -> ClientConnection? {
        open.withLock { $0[ObjectIdentifier(channel)] }
    }

    package func register(_ connection: ClientConnection, for channel: any Channel) {
        open.withLock { $0[ObjectIdentifier(channel)] = connection }
    }

    package func remove(_ channel: any Channel) {
        open.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}

/// One client connection: once its client has gone (closed or half-closed its side, or the connection failed),
/// every registered callback runs once, and callbacks registered later run at once.
public final class ClientConnection: Sendable {
    private struct State {
        var gone = false
        var next = 0
        var callbacks: [Int: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    /// Whether the client has gone.
    public var isGone: Bool { state.withLock { $0.gone } }

    /// Runs `callback` when the client goes (at once if it has); returns a token for `cancel(_:)`.
    public func onGone(_ callback: @escaping @Sendable () -> Void) -> Int? {
        let token: Int? = state.withLock { s in
            guard !s.gone else { return nil }
            s.next += 1
            s.callbacks[s.next] = callback
            return s.next
        }
        if token == nil { callback() }
        return token
    }

    /// Forgets a callback that is no longer needed (its request finished).
    public func cancel(_ token: Int?) {
        guard let token else { return }
        state.withLock { _ = $0.callbacks.removeValue(forKey: token) }
    }

    package func markGone() {
        let callbacks: [@Sendable () -> Void] = state.withLock { s in
            guard !s.gone else { return [] }
            s.gone = true
            defer { s.callbacks = [:] }
            return Array(s.callbacks.values)
        }
        for callback in callbacks { callback() }
    }
}
