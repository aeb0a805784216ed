import NIOCore
import NIOHTTPTypes

/// Closes a connection whose next request has not fully arrived within `timeout`: armed when the connection
/// opens and after each response, disarmed when a request's end is read. Slow clients (a byte a second, headers
/// or body) and idle keep-alive connections cannot hold a socket longer than that; a request being computed is not
/// affected (its own deadline bounds it). It also tells the connection's `ConnectionGuard` when a request starts and
/// ends, so the guard knows which connections are idle. A response sent before its request's body has ended (a
/// refusal on the headers, an unknown route) closes the HTTP/2 stream once written. An HTTP/1.1 connection lingers
/// instead, reading and discarding the rest of the body (closing at once would reset a socket with unread bytes, and
/// the client could lose the response it has not read yet): it closes when no byte arrives for `linger` or the
/// request timeout passes, and serves its next request if the body ends first.
package final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPRequestPart
    package typealias InboundOut = HTTPRequestPart
    package typealias OutboundIn = HTTPResponsePart
    package typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private let connectionGuard: ConnectionGuard?
    private let onTimeout: @Sendable () -> Void
    private var timer: Scheduled<Void>?
    private var inRequest = false
    private var bodyEnded = true
    private var lingerDeadline: NIODeadline?
    /// How long a lingering HTTP/1.1 connection waits for the next byte of a body it answered early.
    package static let linger = TimeAmount.seconds(2)

    package init(timeout: TimeAmount, connectionGuard: ConnectionGuard? = nil, onTimeout: @escaping @Sendable () -> Void = {}) {
        self.timeout = timeout
        self.connectionGuard = connectionGuard
        self.onTimeout = onTimeout
    }

    package func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    package func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
        endRequest(context)
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            bodyEnded = false
            if !inRequest {
                inRequest = true
                connectionGuard?.requestStarted(on: context.channel)
            }
        case .end:
            bodyEnded = true
            if lingerDeadline != nil {
                // The early-answered body is complete: the connection serves its next request as usual.
                lingerDeadline = nil
                arm(context)
                context.fireChannelRead(data)
                return
            }
            disarm()
        case .body:
            if let lingerDeadline {
                // Discarded here: nothing above reads the body of a request already answered.
                armLinger(context, until: lingerDeadline)
                return
            }
        }
        context.fireChannelRead(data)
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response): connectionGuard?.responded(on: context.channel, status: response.status.code)
        case .end:
            arm(context)
            endRequest(context)
            if !bodyEnded {
                let written = promise ?? context.eventLoop.makePromise()
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                if ConnectionGuard.isStream(context.channel) {
                    written.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
                } else {
                    let deadline = NIODeadline.now() + timeout
                    lingerDeadline = deadline
                    armLinger(context, until: deadline)
                }
                context.writeAndFlush(data, promise: written)
                return
            }
        case .body: break
        }
        context.write(data, promise: promise)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        disarm()
        endRequest(context)
        context.fireChannelInactive()
    }

    private func endRequest(_ context: ChannelHandlerContext) {
        guard inRequest else { return }
        inRequest = false
        connectionGuard?.requestEnded(on: context.channel)
    }

    private func arm(_ context: ChannelHandlerContext, in delay: TimeAmount? = nil) {
        disarm()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let onTimeout = delay == nil ? self.onTimeout : {}
        timer = context.eventLoop.scheduleTask(in: delay ?? timeout) {
            onTimeout()
            loopBound.value.close(promise: nil)
        }
    }

    /// Closes the lingering connection after `linger` without a byte, and at `deadline` whatever arrives.
    private func armLinger(_ context: ChannelHandlerContext, until deadline: NIODeadline) {
        arm(context, in: min(Self.linger, max(deadline - .now(), .zero)))
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
