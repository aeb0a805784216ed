import CZeroMQ
import Foundation
import Synchronization

/// A ZAP handler (ZeroMQ RFC 27) admitting only CURVE clients whose public key is in an allow-list: the
/// coordinator's defence against unknown workers. It runs on its own thread, which owns its REP socket at
/// `inproc://zeromq.zap.01`; the allow-list can be replaced at any time.
public final class ZAPAuthenticator: Sendable {
    private let allowed: Mutex<Set<[UInt8]>>
    private let refusals = Mutex(0)
    private let context: ZMQContext
    private let ready = DispatchSemaphore(value: 0)
    private let startError = Mutex<ZMQError?>(nil)

    /// Starts the handler in `context` (before any CURVE server socket binds) with Z85 public keys.
    public init(context: ZMQContext, allowedPublicKeys: [String]) throws {
        self.context = context
        self.allowed = Mutex(Set(try allowedPublicKeys.map { try CurveKeyPair.decode($0) }))
        let thread = Thread { [self] in self.serve() }
        thread.name = "callveil-zap"
        thread.start()
        ready.wait()
        if let error = startError.withLock({ $0 }) { throw error }
    }

    /// Replaces the allow-list.
    public func setAllowed(_ publicKeys: [String]) throws {
        let keys = Set(try publicKeys.map { try CurveKeyPair.decode($0) })
        allowed.withLock { $0 = keys }
    }

    /// Connections refused so far.
    public var refusedCount: Int { refusals.withLock { $0 } }

    private func serve() {
        let socket: ZMQSocket
        do {
            socket = try ZMQSocket(context: context, kind: .rep)
            try socket.bind("inproc://zeromq.zap.01")
        } catch {
            startError.withLock { $0 = error as? ZMQError }
            ready.signal()
            return
        }
        ready.signal()
        defer { socket.close() }
        while true {
            guard let request = try? socket.receive() else { return }  // ETERM at shutdown
            // version, request id, domain, address, identity, mechanism, credentials...
            guard request.count >= 6 else { continue }
            let requestID = request[1]
            let mechanism = String(decoding: request[5], as: UTF8.self)
            let admitted = mechanism == "CURVE" && request.count >= 7 && allowed.withLock { $0.contains(request[6]) }
            if !admitted { refusals.withLock { $0 += 1 } }
            let status = admitted ? "200" : "400"
            let text = admitted ? "OK" : "unknown public key"
            try? socket.send([Array("1.0".utf8), requestID, Array(status.utf8), Array(text.utf8), [], []])
        }
    }
}
