import Foundation
import Gateway
import ServiceCore
import ServiceLifecycle
import ServiceTestSupport
import Testing

/// A stand-alone gateway (`callveil gateway`) run in the test's process on a loopback port, forwarding to `targets`.
struct StandAloneGateway {
    /// Its public port.
    let port: Int
    private let gateway: GatewayServer
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Writes its config into `directory` (keys under `standalone-keys`), starts it and waits for its port.
    static func start(directory: String, targets: [ServiceConfig.Gateway.Target],
                      edit: (inout ServiceConfig.Gateway) -> Void = { _ in }) async throws -> StandAloneGateway {
        let path = "\(directory)/gateway.json"
        var file = ServiceConfig(users: [], usecases: [])
        file.gateway = .init(keyDirectory: "\(directory)/standalone-keys", targets: targets)
        if var gateway = file.gateway {
            edit(&gateway)
            file.gateway = gateway
        }
        file.http = .init(adminPort: 0)
        try JSONEncoder().encode(file).write(to: URL(fileURLWithPath: path))
        let gateway = try await GatewayServer(configPath: path, logger: TestServer.logger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try gateway.makeApplication(host: "127.0.0.1", port: 0, onServerRunning: { continuation.yield($0) })
        let group = ServiceGroup(configuration: .init(services: [app], logger: TestServer.logger))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        return StandAloneGateway(port: port, gateway: gateway, group: group, task: task)
    }

    /// Shuts it down and waits until it has.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        await gateway.shutdown()
    }
}
