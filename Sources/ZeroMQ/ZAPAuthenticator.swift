import CZeroMQ
import Foundation
import Synchronization

/// A ZAP handler (ZeroMQ RFC 27) admitting only CURVE clients whose public key is in an allow-list: the
/// coordinator's defence against unknown workers. Each admitted connection gets the name its key is listed
/// under as its ZAP user id, so every message it sends carries that name (`User-Id` metadata) and a worker's
/// identity is bound to its key, not chosen by the worker. The handler runs on its own thread, which owns its REP
/// socket at `inproc://zeromq.zap.01`, survives any receive error but context termination, and the allow-list
/// can be replaced at any time (`setAllowed`).
public final class ZAPAuthenticator: Sendable {
    private let allowed: Mutex<[[UInt8]: String]>
    private let refusals = Mutex(0)
    private let running = Mutex(false)
    private let context: ZMQContext
    private let ready = DispatchSemaphore(value: 0)
    private let startError = Mutex<ZMQError?>(nil)
    private let onRefused: (@Sendable (_ address: String, _ mechanism: String) -> Void)?

    /// Starts the handler in `context` (before any CURVE server socket binds) with Z85 public keys, each admitted
    /// under the user id given (its worker name); `onRefused` hears of each refused handshake (the peer's address
    /// and mechanism), on the handler's thread.
    public init(context: ZMQContext, allowed: [String: String],
                onRefused: (@Sendable (_ address: String, _ mechanism: String) -> Void)? = nil) throws {
        self.context = context
        self.onRefused = onRefused
        self.allowed = Mutex(try Self.decode(allowed))
        let thread = Thread { [self] in self.serve() }
        thread.name = "callveil-zap"
        thread.start()
        ready.wait()
        if let error = startError.withLock({ $0 }) { throw error }
    }

    /// Starts the handler admitting `allowedPublicKeys`, each under its own Z85 key as user id.
    public convenience init(context: ZMQContext, allowedPublicKeys: [String]) throws {
        try self.init(context: context, allowed: Dictionary(allowedPublicKeys.map { ($0, $0) }, uniquingKeysWith: { a, _ in a }))
    }

    /// Replaces the allow-list (public key → user id). Connections already admitted keep their user id; the
    /// coordinator checks every message's user id against the current list.
    public func setAllowed(_ keys: [String: String]) throws {
        let decoded = try Self.decode(keys)
        allowed.withLock { $0 = decoded }
    }

    /// The user ids currently admitted.
    public var allowedUserIDs: Set<String> { Set(allowed.withLock { $0.values }) }

    /// Connections refused so far.
    public var refusedCount: Int { refusals.withLock { $0 } }

    /// Whether the handler thread is answering (false after the context terminated).
    public var isRunning: Bool { running.withLock { $0 } }

    private static func decode(_ keys: [String: String]) throws -> [[UInt8]: String] {
        var out: [[UInt8]: String] = [:]
        for (key, name) in keys { out[try CurveKeyPair.decode(key)] = name }
        return out
    }

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
        running.withLock { $0 = true }
        ready.signal()
        defer {
            running.withLock { $0 = false }
            socket.close()
        }
        while true {
            let request: [[UInt8]]
            do {
                guard let received = try socket.receive() else { continue }
                request = received
            } catch let error as ZMQError where error.code == EINTR || error.code == EAGAIN {
                continue  // a signal: keep answering, never leave the door unattended
            } catch {
                return  // the context is shutting down; the coordinator then admits no unauthenticated message
            }
            // version, request id, domain, address, identity, mechanism, credentials...
            guard request.count >= 6 else {
                // A REP socket must answer every request to receive the next one.
                try? socket.send([Array("1.0".utf8), request.count > 1 ? request[1] : [], Array("400".utf8),
                                  Array("malformed ZAP request".utf8), [], []])
                continue
            }
            let requestID = request[1]
            let mechanism = String(decoding: request[5], as: UTF8.self)
            let name = mechanism == "CURVE" && request.count >= 7 ? allowed.withLock { $0[request[6]] } : nil
            if name == nil {
                refusals.withLock { $0 += 1 }
                onRefused?(String(decoding: request[3], as: UTF8.self), String(mechanism.prefix(16)))
            }
            let status = name == nil ? "400" : "200"
            let text = name == nil ? "unknown public key" : "OK"
            try? socket.send([Array("1.0".utf8), requestID, Array(status.utf8), Array(text.utf8), Array((name ?? "").utf8), []])
        }
    }
}
