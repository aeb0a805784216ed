import NIOCore
import NIOHTTPTypes

/// Closes a connection whose next request has not fully arrived within `timeout`: armed when the connection
/// opens and after each response, disarmed when a request's end is read. Slow clients (a byte a second, headers
/// or body) and idle keep-alive connections cannot hold a socket longer than that; a request being computed is not
/// affected (its own deadline bounds it). It also tells the connection's `ConnectionGuard` when a request starts and
/// ends, so the guard knows which connections are idle.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private let connectionGuard: ConnectionGuard?
    private let onTimeout: @Sendable () -> Void
    private var timer: Scheduled<Void>?
    private var inRequest = false

    init(timeout: TimeAmount, connectionGuard: ConnectionGuard? = nil, onTimeout: @escaping @Sendable () -> Void = {}) {
        self.timeout = timeout
        self.connectionGuard = connectionGuard
        self.onTimeout = onTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
        endRequest(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            if !inRequest {
                inRequest = true
                connectionGuard?.requestStarted(on: context.channel)
            }
        case .end: disarm()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            arm(context)
            endRequest(context)
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        endRequest(context)
        context.fireChannelInactive()
    }

    private func endRequest(_ context: ChannelHandlerContext) {
        guard inRequest else { return }
        inRequest = false
        connectionGuard?.requestEnded(on: context.channel)
    }

    private func arm(_ context: ChannelHandlerContext) {
        disarm()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let onTimeout = self.onTimeout
        timer = context.eventLoop.scheduleTask(in: timeout) {
            onTimeout()
            loopBound.value.close(promise: nil)
        }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
