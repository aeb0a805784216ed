/// Where a received message came from: the ZAP user id its connection was admitted under (nil when no ZAP
/// handler authenticated it) and the descriptor of that connection, which a socket monitor's disconnect event
/// names when the connection closes.
public struct ZMQPeer: Sendable, Equatable {
    public var userID: String?
    public var descriptor: Int32?

    public init(userID: String? = nil, descriptor: Int32? = nil) {
        self.userID = userID
        self.descriptor = descriptor
    }
}
