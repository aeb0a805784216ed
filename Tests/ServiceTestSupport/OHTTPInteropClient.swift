import Foundation

/// `scripts/ohttp-client.py` (an Oblivious HTTP client over pyhpke, `cryptography` and httpx/h2 from PyPI, none
/// of it CallVeil's code) in the virtual environment `make deps` installs, `.build-venv`.
public enum OHTTPInteropClient {
    /// The package's root directory.
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The venv's Python and the script; nil when `make deps` has not installed them.
    public static var command: (python: String, script: String)? {
        let python = packageRoot.appendingPathComponent(".build-venv/bin/python").path
        let script = packageRoot.appendingPathComponent("scripts/ohttp-client.py").path
        return FileManager.default.isExecutableFile(atPath: python) ? (python, script) : nil
    }

    /// Runs the script with `arguments` to completion; its output, or an error with it when it fails.
    @discardableResult
    public static func run(_ arguments: [String]) async throws -> String {
        guard let command else { throw InteropError("the interop client is not installed: run `make deps`") }
        let (data, status) = try await runChildProcess(command.python, [command.script] + arguments)
        let output = String(decoding: data, as: UTF8.self)
        guard status == 0 else { throw InteropError("ohttp-client.py \(arguments.first ?? ""): \(output)") }
        return output
    }

    /// Starts the script with `arguments` and waits for its first line of output, on a thread of its own: blocking
    /// a thread of the cooperative pool could starve the server the script is talking to.
    static func startWithFirstLine(_ arguments: [String]) async throws -> (process: Process, line: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    guard let command else { throw InteropError("the interop client is not installed: run `make deps`") }
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: command.python)
                    process.arguments = [command.script] + arguments
                    let pipe = Pipe()
                    process.standardOutput = pipe
                    try process.run()
                    var line = Data()
                    while !line.contains(UInt8(ascii: "\n")) {
                        let chunk = pipe.fileHandleForReading.availableData
                        guard !chunk.isEmpty else { break }
                        line.append(chunk)
                    }
                    return (process, String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
                })
            }.start()
        }
    }

    /// A child process of the script, killed (once) by `stop`.
    public class Child: @unchecked Sendable {
        let process: Process

        init(process: Process) { self.process = process }

        /// Stops the process (once; later calls do nothing).
        public func stop() {
            guard process.isRunning else { return }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// The script's proxy: a local HTTP/1.1 listener whose requests go through the gateway, encapsulated, over
    /// HTTP/2. Every exchange is logged as a JSON line.
    public final class Proxy: Child, @unchecked Sendable {
        /// `http://127.0.0.1:<port>`.
        public let url: String
        /// The JSON-lines log of exchanges.
        public let logPath: String

        /// Starts the proxy for `gatewayURL` with key configurations at `keysURL`; `ca` trusts a test certificate.
        public static func start(gatewayURL: String, keysURL: String, ca: String?, h2c: Bool, logPath: String) async throws -> Proxy {
            let (process, text) = try await startWithFirstLine(["proxy", "--gateway", gatewayURL, "--keys", keysURL, "--log", logPath]
                                                               + (ca.map { ["--ca", $0] } ?? []) + (h2c ? ["--h2c"] : []))
            guard text.hasPrefix("listening "), let port = Int(text.dropFirst("listening ".count)) else {
                process.terminate()
                throw InteropError("the proxy did not start: \(text)")
            }
            return Proxy(process: process, url: "http://127.0.0.1:\(port)", logPath: logPath)
        }

        private init(process: Process, url: String, logPath: String) {
            self.url = url
            self.logPath = logPath
            super.init(process: process)
        }

        /// The exchanges logged so far.
        public func exchanges() throws -> [[String: Any]] {
            try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n").map {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
            }
        }
    }

    /// A server of the script that prints "listening PORT" (`terminate`, `dns`).
    public final class Listening: Child, @unchecked Sendable {
        /// The port it listens on.
        public let port: Int

        /// Starts the script with `arguments` and waits for its port.
        public static func start(_ arguments: [String]) async throws -> Listening {
            let (process, text) = try await startWithFirstLine(arguments)
            guard text.hasPrefix("listening "), let port = Int(text.dropFirst("listening ".count)) else {
                process.terminate()
                throw InteropError("\(arguments.first ?? "") did not start: \(text)")
            }
            return Listening(process: process, port: port)
        }

        private init(process: Process, port: Int) {
            self.port = port
            super.init(process: process)
        }
    }

    /// One HTTP/2 connection that made a request and then never reads again (`hold`): a relay's idle connection
    /// that does not answer the server's GOAWAY ping.
    public final class HeldConnection: Child, @unchecked Sendable {
        /// The status of its one request.
        public let status: String

        /// Opens the connection to `127.0.0.1:port` (TLS trusting `ca`, or prior knowledge when nil) and GETs `path`.
        public static func open(port: Int, path: String, ca: String?) async throws -> HeldConnection {
            let (process, text) = try await startWithFirstLine(["hold", "--port", "\(port)", "--path", path] + (ca.map { ["--tls", "--ca", $0] } ?? []))
            guard text.hasPrefix("status ") else {
                process.terminate()
                throw InteropError("the held connection did not get an answer: \(text)")
            }
            return HeldConnection(process: process, status: String(text.dropFirst("status ".count)))
        }

        private init(process: Process, status: String) {
            self.status = status
            super.init(process: process)
        }
    }

    /// The interop client failed.
    public struct InteropError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
