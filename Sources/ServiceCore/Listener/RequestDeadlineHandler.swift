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
/// request timeout passes, and serves its next request if the body ends first. Past `discardBudget` of such a body
/// the connection reads once per `tarpitInterval` (a few MiB a second) instead of as fast as the client sends: a
/// client still gets its answer once its body is sent, and a flood of oversized uploads costs a trickle of reads,
/// not a copy of every byte it sends at full speed.
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
    /// The current request's declared body length, and the body bytes read so far.
    private var declaredLength: Int?
    private var received = 0
    /// Body bytes this lingering connection may still read at full speed (nil: no bound).
    private var discardLeft: Int?
    /// The next read of a connection past its budget, when one is scheduled.
    private var spacedRead: Scheduled<Void>?
    /// Whether reads are spaced by `tarpitInterval`: the budget is spent.
    private var tarpit: Bool { (discardLeft ?? 1) <= 0 }
    /// How long a lingering HTTP/1.1 connection waits for the next byte of a body it answered early.
    package static let linger = TimeAmount.seconds(2)
    /// The body bytes an HTTP/1.1 connection reads and discards at full speed after answering early.
    package static let discardBudget = 1 << 20
    /// The pause between reads of a lingering connection past its discard budget (one read takes what the socket
    /// holds, up to a few hundred KiB).
    package static let tarpitInterval = TimeAmount.milliseconds(50)

    package init(timeout: TimeAmount, connectionGuard: ConnectionGuard? = nil, onTimeout: @escaping @Sendable () -> Void = {}) {
        self.timeout = timeout
        self.connectionGuard = connectionGuard
        self.onTimeout = onTimeout
    }

    package func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    package func handlerRemoved(context: ChannelHandlerContext) {
        cancelSpacedRead()
        disarm()
        endRequest(context)
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            bodyEnded = false
            declaredLength = request.headerFields[.contentLength].flatMap { Int($0) }
            received = 0
            if !inRequest {
                inRequest = true
                connectionGuard?.requestStarted(on: context.channel)
            }
        case .end:
            bodyEnded = true
            if lingerDeadline != nil {
                // The early-answered body is complete: the connection serves its next request as usual.
                lingerDeadline = nil
                discardLeft = nil
                arm(context)
                context.fireChannelRead(data)
                return
            }
            disarm()
        case .body(let bytes):
            received += bytes.readableBytes
            if let lingerDeadline {
                // Discarded here: nothing above reads the body of a request already answered.
                // Once the budget is spent, the rest is read a little at a time, until it ends or the deadline.
                if let left = discardLeft { discardLeft = left - bytes.readableBytes }
                armLinger(context, until: lingerDeadline)
                return
            }
        }
        context.fireChannelRead(data)
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            connectionGuard?.responded(on: context.channel, status: response.status.code)
            if !bodyEnded, !ConnectionGuard.isStream(context.channel), Self.tarpits(declared: declaredLength, received: received) {
                // Too much left to read and discard at full speed: the budget, then a trickle.
                discardLeft = Self.discardBudget
            }
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

    package func read(context: ChannelHandlerContext) {
        guard tarpit else {
            context.read()
            return
        }
        // Past the discard budget: one read per interval, the client's other bytes waiting in the kernel.
        guard spacedRead == nil else { return }
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        spacedRead = context.eventLoop.scheduleTask(in: Self.tarpitInterval) {
            loopBound.value.handler.spacedRead = nil
            loopBound.value.context.read()
        }
    }

    /// Whether an early answer reads the rest of the body slowly: more than `discardBudget` bytes declared and not
    /// yet received, or a body of unknown length.
    package static func tarpits(declared: Int?, received: Int) -> Bool {
        guard let declared else { return true }
        return declared - received > discardBudget
    }

    package func channelInactive(context: ChannelHandlerContext) {
        cancelSpacedRead()
        disarm()
        endRequest(context)
        context.fireChannelInactive()
    }

    private func cancelSpacedRead() {
        spacedRead?.cancel()
        spacedRead = nil
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
