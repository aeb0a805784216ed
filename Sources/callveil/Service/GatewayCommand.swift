import ArgumentParser
import Gateway
import Hummingbird
import Logging
import LookupService

/// `callveil gateway`: a stand-alone Oblivious HTTP gateway (RFC 9458) forwarding to the allow-listed targets of
/// the config's `gateway` section. `serve` and `coordinator` run the same gateway on their own port when their
/// config has a `gateway` section.
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract: "Serve an Oblivious HTTP gateway in front of lookup services.",
        discussion: """
            The config is a service config with a `gateway` section naming `targets` (users and usecases may be \
            absent), and optionally `http` (protocol h2c or tls for HTTP/2) and `database` (keys shared by several \
            gateways). The key configurations are at gateway.configPath (default /ohttp-configs), encapsulated \
            requests go to gateway.requestPath (default /ohttp-gateway). SIGTERM and SIGINT drain and stop.
            """)

    @Option(help: "Gateway config (JSON).")
    var config: String

    @Option(help: "Address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on.")
    var port: Int = 8443

    @OptionGroup var admin: AdminListenerOptions

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = try logging.bootstrap()
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        let tracing = try tracingFromEnvironment(serviceName: "callveil-gateway", logger: logger)
        let gateway = try await GatewayServer(configPath: config, tracer: tracing?.tracer, logger: logger)
        gateway.metrics.setBuildInfo(version: callveilVersion)
        let host = self.host, scheme = gateway.http.protocol == "tls" ? "https" : "http"
        let adminHost = admin.adminHost ?? gateway.http.adminHost ?? "127.0.0.1"
        let app = try gateway.makeApplication(host: host, port: port, admin: admin.address, onAdminRunning: { port in
            logger.info("admin listener (/healthz, /metrics)", metadata: ["url": .string("http://\(adminHost):\(port)")])
        }) { port in
            logger.info("gateway listening", metadata: [
                "url": .string("\(scheme)://\(host):\(port)"), "protocol": .string(gateway.http.protocol ?? "http1"),
                "keys": .string(gateway.settings.keysPath), "requests": .string(gateway.settings.gatewayPath),
            ])
        }
        try await runUntilSignalled(app, tracing: tracing, logger: logger)
        await gateway.shutdown()
    }
}
