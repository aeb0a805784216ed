import Synchronization

/// The sizes of a client's exchanges, by path: what a relay sees (the encapsulated message when the client goes
/// through a gateway) and the HTTP bodies inside. `callveil doctor` reads it for the numbers of Apple's form.
public final class ExchangeLog: Sendable {
    /// One exchange.
    public struct Exchange: Sendable, Equatable {
        /// The request path (`/key`, `/queries`, …).
        public var path: String
        /// HTTP status of the answer.
        public var status: Int
        /// Request and response bodies.
        public var requestBytes: Int
        public var responseBytes: Int
        /// The encapsulated request and response on the wire to the gateway (nil when sent directly).
        public var wireRequestBytes: Int?
        public var wireResponseBytes: Int?
    }

    private let entries = Mutex<[Exchange]>([])

    /// An empty log.
    public init() {}

    /// Every exchange so far, in order.
    public var exchanges: [Exchange] { entries.withLock { $0 } }

    func append(_ exchange: Exchange) {
        entries.withLock { $0.append(exchange) }
    }
}
