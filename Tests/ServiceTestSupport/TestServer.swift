import Foundation
import Hummingbird
import Logging
import LookupClient
import LookupEngine
import LookupService
import LookupStorage
import ServiceCore
import ServiceLifecycle
import Synchronization

/// A service running on a loopback port for the length of a test, stopped gracefully.
public struct TestServer: Sendable {
    public let server: LookupServer
    public let url: String
    /// The admin listener (`/healthz`, `/metrics`).
    public let adminURL: String
    public let group: ServiceGroup
    public let task: Task<Void, any Error>
    /// Fetches real Privacy Pass tokens (user token `AAAA`, tier1) when the server requires them.
    public let tokens: PrivacyPassAuthorization?

    public static var logger: Logger {
        var logger = Logger(label: "callveil-test")
        logger.logLevel = .critical
        return logger
    }

    /// Starts a service from a config file on an ephemeral port (or on `host:port`).
    public static func start(configPath: String, makeExecutor: (@Sendable (ExecutorEnvironment) throws -> any ShardExecutor)? = nil,
                             metrics: ServiceMetrics? = nil, host: String = "127.0.0.1", port: Int = 0) async throws -> TestServer {
        let server = try await LookupServer(configPath: configPath, pool: nil, metrics: metrics, makeExecutor: makeExecutor, logger: logger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let (adminPorts, adminContinuation) = AsyncStream<Int>.makeStream()
        let app = try server.makeApplication(host: host, port: port, onAdminRunning: { adminContinuation.yield($0) }) { port in
            continuation.yield(port)
        }
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        var adminIterator = adminPorts.makeAsyncIterator()
        guard let port = await iterator.next(), let adminPort = await adminIterator.next() else { throw CancellationError() }
        let url = "http://\(host):\(port)"
        let tokens = server.privacyPass.keys == nil ? nil : PrivacyPassAuthorization(issuer: LookupHTTPClient(baseURL: url), userToken: "AAAA")
        return TestServer(server: server, url: url, adminURL: "http://\(server.http.adminHost ?? "127.0.0.1"):\(adminPort)", group: group,
                          task: task, tokens: tokens)
    }

    /// Stops the server and waits for it.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// An HTTP client for this server.
    public var http: LookupHTTPClient { LookupHTTPClient(baseURL: url) }
    /// An HTTP client for its admin listener.
    public var admin: LookupHTTPClient { LookupHTTPClient(baseURL: adminURL) }

    /// Raw POST with explicit headers, plus a fresh token when the server requires one and `token` is true.
    public func post(_ path: String, body: [UInt8], headers: [(String, String)], token: Bool = true) async throws -> (status: Int, body: [UInt8]) {
        var headers = headers
        if token, let tokens, let value = try await tokens.authorization() { headers.append(("Authorization", value)) }
        return try await http.send(path: path, headers: headers, body: body)
    }

    /// A device-like client of this server with its own tokens.
    public func device(userIdentifier: String = UUID().uuidString) -> LookupDevice {
        let auth: any AuthorizationProvider = server.privacyPass.keys == nil ? NoAuthorization()
            : PrivacyPassAuthorization(issuer: http, userToken: "AAAA")
        return LookupDevice(http: http, userIdentifier: userIdentifier, authorization: auth)
    }
}

/// A fresh temporary directory, removed when the test process exits (a full run makes hundreds, some with shards).
public func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "callveil-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    temporaryDirectories.withLock { made in
        if made.isEmpty {
            atexit { for path in temporaryDirectories.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) } }
        }
        made.append(path)
    }
    return path
}

/// The directories `temporaryDirectory()` made in this process.
private let temporaryDirectories = Mutex<[String]>([])

/// Writes a service config with the given use cases (absolute file stems) into `directory`, changed by `edit`;
/// returns its path.
public func writeServiceConfig(in directory: String, usecases: [ServiceConfig.UseCase], keyMaxAge: Int? = nil,
                        privacyPass: Bool = true, edit: (inout ServiceConfig) -> Void = { _ in }) throws -> String {
    var config = ServiceConfig(users: [.init(tier: "tier1", tokens: ["AAAA"]), .init(tier: "tier2", tokens: ["BBBB"])],
                               usecases: usecases, keys: .init(database: "\(directory)/keys.sqlite", maxAgeSeconds: keyMaxAge),
                               privacyPass: .init(enabled: privacyPass), computeThreads: 2, concurrentQueries: 2)
    config.http = .init(adminPort: 0)  // tests run side by side: a free admin port each
    edit(&config)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let path = "\(directory)/service-config.json"
    try encoder.encode(config).write(to: URL(fileURLWithPath: path))
    return path
}

/// A counter shared by concurrent test tasks.
public final class Tally: Sendable {
    private let value = Mutex(0)
    /// A counter at zero.
    public init() {}
    /// Adds one.
    public func add() { value.withLock { $0 += 1 } }
    /// The count.
    public var count: Int { value.withLock { $0 } }
}
