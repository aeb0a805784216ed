import NIOCore
import NIOHTTPTypes

/// Closes a connection whose next request has not fully arrived within `timeout`: armed when the connection
/// opens and after each response, disarmed when a request's end is read. Slow clients (a byte a second, headers
/// or body) and idle keep-alive connections cannot hold a socket longer than that; a request being computed is not
/// affected (its own deadline bounds it). It also tells the connection's `ConnectionGuard` when a request starts and
/// ends, so the guard knows which connections are idle. A response sent before its request's body has ended (a
/// refusal on the headers, an unknown route) closes the connection (or the HTTP/2 stream) once written: the rest of
/// the body is not wanted, and a client trickling it must not keep the socket.
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
    private var bodyEnded = true

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
            bodyEnded = false
            if !inRequest {
                inRequest = true
                connectionGuard?.requestStarted(on: context.channel)
            }
        case .end:
            bodyEnded = true
            disarm()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response): connectionGuard?.responded(on: context.channel, status: response.status.code)
        case .end:
            arm(context)
            endRequest(context)
            if !bodyEnded {
                let written = promise ?? context.eventLoop.makePromise()
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                written.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
                context.writeAndFlush(data, promise: written)
                return
            }
        case .body: break
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
