import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Watches one connection for its client going away: end of input (the client closed or half-closed its side;
/// the server allows half-closure, so this is the only sign while a request is being computed), a connection error,
/// or the channel closing. Malformed HTTP framing is not a departure: the client is there to read its 400. It registers the connection in `ClientConnections` for as long as the channel lives.
package final class ClientDisconnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPRequestPart
    package typealias InboundOut = HTTPRequestPart

    private let connections: ClientConnections
    private let connection = ClientConnection()

    package init(connections: ClientConnections) {
        self.connections = connections
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        connections.register(connection, for: context.channel)
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        connections.remove(context.channel)
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { connection.markGone() }
        context.fireUserInboundEventTriggered(event)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !(error is HTTPParserError) { connection.markGone() }
        context.fireErrorCaught(error)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        connection.markGone()
        connections.remove(context.channel)
        context.fireChannelInactive()
    }
}
