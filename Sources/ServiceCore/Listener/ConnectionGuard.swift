import NIOCore
import Synchronization

/// Keeps sockets that do no useful work from holding the listener's connection cap, whatever the protocol: a
/// connection must start its first request (TLS handshake, HTTP/2 preface and settings, and the request's headers
/// included) within `handshakeTimeout`, and is closed after `idleTimeout` with no request open. A connection is
/// "unproven" until it has been answered with a success (status below 400): silent sockets, half handshakes,
/// bodies trickled a byte a second and requests refused as unauthenticated all stay unproven, and unproven
/// connections may hold at most `maxUnproven` slots, a new one beyond closing the oldest. So hostile sockets
/// cannot starve the clients that do real requests, such as the relay's long-lived connections. The per-request
/// deadline of the HTTP/1.1 connection or HTTP/2 stream (`RequestDeadlineHandler`) and the minimum body rate
/// (`BodyAdmissionMiddleware`) still bound each request once started.
public final class ConnectionGuard: Sendable {
    /// Time from accept to the first request's headers.
    package let handshakeTimeout: TimeAmount
    /// Time a connection may stay open with no request in progress.
    package let idleTimeout: TimeAmount
    /// Connections without a first request at most.
    package let maxUnproven: Int
    /// Called with the reason each time the guard closes a connection (`handshake`, `idle`, `evicted`).
    package let onClose: @Sendable (String) -> Void

    private struct State {
        var connections: [ObjectIdentifier: Activity] = [:]
        /// Unproven connections by arrival.
        var unproven: [ObjectIdentifier: (order: Int, channel: any Channel)] = [:]
        var arrivals = 0
    }

    private let state = Mutex(State())

    /// A guard for one listener.
    public init(handshakeTimeout: TimeAmount, idleTimeout: TimeAmount, maxUnproven: Int, onClose: @escaping @Sendable (String) -> Void = { _ in }) {
        self.handshakeTimeout = handshakeTimeout
        self.idleTimeout = idleTimeout
        self.maxUnproven = max(maxUnproven, 1)
        self.onClose = onClose
    }

    /// The handler to put first in each accepted connection's pipeline (before TLS).
    package func handler() -> ConnectionGuardHandler { ConnectionGuardHandler(guard: self) }

    /// Connections open now that have not started a request.
    public var unprovenCount: Int { state.withLock { $0.unproven.count } }

    /// One connection's requests in progress and timer; used on its event loop only.
    package final class Activity: @unchecked Sendable {
        let channel: any Channel
        /// Closes the socket from the guard's place in the pipeline, before TLS: no close_notify sent or waited for.
        let closeSocket: @Sendable () -> Void
        var open = 0
        var proven = false
        var timer: Scheduled<Void>?

        init(channel: any Channel, closeSocket: @escaping @Sendable () -> Void) {
            self.channel = channel
            self.closeSocket = closeSocket
        }
    }

    package func opened(_ channel: any Channel, closeSocket: @escaping @Sendable () -> Void = {}) {
        let activity = Activity(channel: channel, closeSocket: closeSocket)
        let evicted: (any Channel)? = state.withLock { s in
            s.connections[ObjectIdentifier(channel)] = activity
            s.arrivals += 1
            s.unproven[ObjectIdentifier(channel)] = (s.arrivals, channel)
            guard s.unproven.count > maxUnproven, let oldest = s.unproven.min(by: { $0.value.order < $1.value.order }) else { return nil }
            s.unproven.removeValue(forKey: oldest.key)
            return oldest.value.channel
        }
        if let evicted {
            onClose("evicted")
            evicted.close(promise: nil)
        }
        arm(activity, after: handshakeTimeout, reason: "handshake")
    }

    package func closed(_ channel: any Channel) {
        let activity = state.withLock { s in
            s.unproven.removeValue(forKey: ObjectIdentifier(channel))
            return s.connections.removeValue(forKey: ObjectIdentifier(channel))
        }
        activity?.timer?.cancel()
    }

    /// Closes every connection open now, whatever it is doing (the end of a shutdown's grace period), at once: a TLS
    /// peer is not waited for; returns how many there were.
    package func closeAll() -> Int {
        let connections = state.withLock { Array($0.connections.values) }
        for connection in connections { connection.closeSocket() }
        return connections.count
    }

    /// The connection a request channel belongs to: the channel of an HTTP/1.1 request, the parent of an HTTP/2
    /// stream (whose parent is itself a child of the listener).
    package static func connection(of channel: any Channel) -> ObjectIdentifier {
        if isStream(channel), let parent = channel.parent { return ObjectIdentifier(parent) }
        return ObjectIdentifier(channel)
    }

    /// Whether a request channel is an HTTP/2 stream (a child of a connection) rather than an HTTP/1.1 connection.
    package static func isStream(_ channel: any Channel) -> Bool {
        channel.parent?.parent != nil
    }

    /// The activity of the connection a request channel belongs to.
    package func activity(of channel: any Channel) -> Activity? {
        state.withLock { $0.connections[Self.connection(of: channel)] }
    }

    /// A request's headers arrived on `channel` (a connection or an HTTP/2 stream).
    package func requestStarted(on channel: any Channel) {
        guard let activity = activity(of: channel) else { return }
        activity.open += 1
        activity.timer?.cancel()
        activity.timer = nil
    }

    /// A response with `status` is being sent on `channel`: a success proves the connection.
    package func responded(on channel: any Channel, status: Int) {
        guard status < 400, let activity = activity(of: channel), !activity.proven else { return }
        activity.proven = true
        state.withLock { _ = $0.unproven.removeValue(forKey: ObjectIdentifier(activity.channel)) }
    }

    /// A request on `channel` ended (answered, or its stream or connection went away).
    package func requestEnded(on channel: any Channel) {
        guard let activity = activity(of: channel) else { return }
        activity.open = max(activity.open - 1, 0)
        if activity.open == 0 { arm(activity, after: idleTimeout, reason: "idle") }
    }

    private func arm(_ activity: Activity, after delay: TimeAmount, reason: String) {
        activity.timer?.cancel()
        let onClose = self.onClose
        activity.timer = activity.channel.eventLoop.scheduleTask(in: delay) {
            guard activity.open == 0 else { return }
            onClose(reason)
            activity.channel.close(promise: nil)
        }
    }
}

/// Registers its connection with the guard while the connection is open.
package final class ConnectionGuardHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = NIOAny

    private let connectionGuard: ConnectionGuard
    private var registered = false

    package init(guard connectionGuard: ConnectionGuard) { self.connectionGuard = connectionGuard }

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { register(context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        register(context)
        context.fireChannelActive()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        if registered { connectionGuard.closed(context.channel) }
        registered = false
        context.fireChannelInactive()
    }

    private func register(_ context: ChannelHandlerContext) {
        guard !registered else { return }
        registered = true
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        connectionGuard.opened(context.channel) {
            bound.eventLoop.execute { bound.value.close(promise: nil) }
        }
    }
}
