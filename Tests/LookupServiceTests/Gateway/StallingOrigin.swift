import Crypto
import Foundation
import Gateway
import LookupClient
import LookupProtocol
import LookupService
import Hummingbird
import LookupEngine
import LookupStorage
import NIOEmbedded
import ObliviousHTTP
import ServiceCore
import ServiceTestSupport
import ServiceLifecycle
import Testing

/// An HTTP origin that answers every request with its headers and 3 bytes of a 100,000-byte body, then sends nothing
/// more: a target stalled mid-body (a Python child process on loopback).
final class StallingOrigin: @unchecked Sendable {
    let port: Int
    private let process: Process

    init() throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", """
            import socket, sys, threading, time
            server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(16)
            print(server.getsockname()[1], flush=True)
            held = []
            def serve(conn):
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 100000\\r\\n\\r\\nabc")
                held.append(conn)
            while True:
                conn, _ = server.accept()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()
            """]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice  // not the test runner's: it waits for that pipe to close
        try process.run()
        let line = String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(line) else {
            process.terminate()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the stalling origin did not start: \(line)"])
        }
        self.port = port
    }

    /// Kills the origin (SIGKILL: the service lifecycle of the tests ignores SIGTERM, and a child inherits that).
    func stop() { kill(process.processIdentifier, SIGKILL) }
}
