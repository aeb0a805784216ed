import Foundation
import Hummingbird
import Logging
import LookupClient
import LookupService
import ServiceLifecycle

/// A service running on a loopback port for the length of a test, stopped gracefully.
struct TestServer {
    let server: LookupServer
    let url: String
    let group: ServiceGroup
    let task: Task<Void, any Error>

    static var logger: Logger {
        var logger = Logger(label: "callveil-test")
        logger.logLevel = .critical
        return logger
    }

    /// Starts a service from a config file on an ephemeral port.
    static func start(configPath: String, verifier: (any PrivateTokenVerifier)? = nil) async throws -> TestServer {
        let server = try await LookupServer(configPath: configPath, logger: logger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = server.makeApplication(host: "127.0.0.1", port: 0, verifier: verifier) { port in continuation.yield(port) }
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return TestServer(server: server, url: "http://127.0.0.1:\(port)", group: group, task: task)
    }

    /// Stops the server and waits for it.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// An HTTP client for this server.
    var http: LookupHTTPClient { LookupHTTPClient(baseURL: url) }

    /// Raw POST with explicit headers.
    func post(_ path: String, body: [UInt8], headers: [(String, String)]) async throws -> (status: Int, body: [UInt8]) {
        try await http.send(path: path, headers: headers, body: body)
    }
}

/// A fresh temporary directory.
func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "callveil-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Writes a service config with the given use cases (absolute file stems) into `directory`; returns its path.
func writeServiceConfig(in directory: String, usecases: [ServiceConfig.UseCase], keyMaxAge: Int? = nil) throws -> String {
    let config = ServiceConfig(users: [.init(tier: "tier1", tokens: ["AAAA"])], usecases: usecases,
                               keys: .init(database: "\(directory)/keys.sqlite", maxAgeSeconds: keyMaxAge),
                               computeThreads: 2, concurrentQueries: 2)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let path = "\(directory)/service-config.json"
    try encoder.encode(config).write(to: URL(fileURLWithPath: path))
    return path
}
