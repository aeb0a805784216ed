import Foundation
import NIOCore

/// A listener could not take its address, naming the address and the listener (NIO reports only
/// `bind(descriptor:ptr:bytes:): Address already in use (errno: 98)`). Compare codes, not messages.
public struct ListenerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable { case addressInUse, permissionDenied, cannotBind }
        fileprivate let base: Base
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// Another process (or listener) holds the address.
        public static let addressInUse = Code(base: .addressInUse)
        /// The port needs privileges the process lacks (below 1024 without `CAP_NET_BIND_SERVICE`).
        public static let permissionDenied = Code(base: .permissionDenied)
        /// Any other failure to bind (an address not on this host, …).
        public static let cannotBind = Code(base: .cannotBind)
    }

    /// What went wrong.
    public let code: Code
    /// Which listener (`public port`, `admin listener`).
    public let listener: String
    /// `host:port` as configured.
    public let address: String
    /// The system's reason.
    public let reason: String

    /// The error for `error`, a failure to bind `host:port`; nil when `error` is not one.
    package init?(_ error: any Error, listener: String, host: String, port: Int) {
        guard let io = error as? IOError, "\(io)".hasPrefix("bind(") else { return nil }
        switch io.errnoCode {
        case 98: code = .addressInUse  // EADDRINUSE
        case 13: code = .permissionDenied  // EACCES
        default: code = .cannotBind
        }
        self.listener = listener
        self.address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        self.reason = String(cString: strerror(io.errnoCode))
    }

    public var description: String { "cannot listen on \(address) (\(listener)): \(reason) [\(code)]" }
}
