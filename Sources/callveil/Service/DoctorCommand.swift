import ArgumentParser
import Foundation
import Logging
import LookupService
import Onboarding
import ServiceCore
import ServiceLifecycle

/// `callveil doctor`: Apple's onboarding checklist against a deployment, from the outside and through its gateway,
/// or (`--local`) against a service config before it is deployed.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a deployment against Apple's onboarding checklist, and print the numbers for the form.",
        discussion: """
            Checks, in Apple's order: URL shapes (https, 443, a bare subdomain for the service and the issuer, no \
            trailing '/'), TLS with ALPN h2 on the gateway, the gateway's key configuration, a user token iOS sends \
            (base64), the issuer's directory and the bearer token's key, the use cases <bundle id>.block and \
            .identity, a device lookup of the test identity through the gateway, the DNS TXT record, and the /key \
            and /queries sizes against --max-request-bytes. Each failure prints its fix. Exit status 1 when any fails.
            With --local --config, a service is started from the config on loopback in a sandbox (the config's \
            datasets, new stores in a temporary directory: the provider's state is not touched) and the checks that \
            need the public deployment (URLs, TLS, DNS) are skipped.
            """)

    @Option(help: "The service URL of the extension's context, e.g. https://service.example.net.")
    var serviceUrl: String?

    @Option(help: "The token issuer URL (default: the service URL).")
    var issuerUrl: String?

    @Option(help: "The Oblivious HTTP gateway resource, e.g. https://gateway.example.net/ohttp-gateway.")
    var gatewayUrl: String?

    @Option(help: "The gateway's key configuration resource (default: ohttp-configs beside the gateway resource).")
    var gatewayKeysUrl: String?

    @Option(help: "The Live Caller ID Lookup extension's bundle identifier (use cases <id>.block and <id>.identity).")
    var bundleId: String

    @Option(help: "The URL-filter app's bundle identifier, when the deployment serves NEURLFilter (use case <id>.url.filtering).")
    var urlFilterBundleId: String?

    @Option(help: "The bearer token Apple's validation will use (a user token of the service config).")
    var userToken: String

    @Option(help: "A CA certificate (PEM) to trust besides the system's.")
    var ca: String?

    @Option(help: "HOST=ADDRESS: connect to ADDRESS for HOST instead of resolving it (repeatable; a deployment not yet in DNS).")
    var connectTo: [String] = []

    @Option(help: "The resolver for the TXT record, ADDRESS[:PORT] (default: the first nameserver of /etc/resolv.conf).")
    var dnsServer: String?

    @Option(help: "The request size the relay is stated to accept, in bytes: /key and /queries are checked against it.")
    var maxRequestBytes: Int?

    @Option(help: "The test identity's number.")
    var testNumber: String = "+14085551212"

    @Option(help: "The test identity's name.")
    var testName: String = "Johnny Appleseed"

    @Flag(help: "Start a service from --config on loopback and check it (URL, TLS and DNS checks are skipped).")
    var local = false

    @Option(help: "With --local: the service config.")
    var config: String?

    func validate() throws {
        if local {
            guard config != nil else { throw ValidationError("--local needs --config") }
        } else {
            guard serviceUrl != nil, gatewayUrl != nil else { throw ValidationError("give --service-url and --gateway-url (or --local --config)") }
        }
        for mapping in connectTo where mapping.split(separator: "=").count != 2 {
            throw ValidationError("--connect-to takes HOST=ADDRESS, not \(mapping)")
        }
        if let limit = maxRequestBytes, limit <= 0 { throw ValidationError("--max-request-bytes must be positive") }
        if let dnsServer, Self.resolver(dnsServer) == nil { throw ValidationError("--dns-server takes an IPv4 ADDRESS[:PORT]") }
    }

    static func resolver(_ text: String) -> TXTResolver? {
        let parts = text.split(separator: ":")
        guard parts.count <= 2, let port = parts.count == 2 ? UInt16(parts[1]) : 53 else { return nil }
        return TXTResolver(server: String(parts[0]), port: port)
    }

    func run() async throws {
        let report: DoctorReport
        if local, let config {
            report = try await runLocal(config: config)
        } else {
            report = await Doctor(settings(service: serviceUrl ?? "", gateway: gatewayUrl ?? "")).run()
        }
        print(report.rendered())
        if !report.failed.isEmpty { throw ExitCode(1) }
    }

    private func settings(service: String, gateway: String) -> Doctor.Settings {
        var settings = Doctor.Settings(serviceURL: service, issuerURL: issuerUrl ?? service, gatewayURL: gateway,
                                       gatewayKeysURL: gatewayKeysUrl ?? DeviceProbe.defaultKeysURL(gatewayURL: gateway),
                                       bundleID: bundleId, userToken: userToken)
        settings.ca = ca
        settings.hostOverrides = Dictionary(connectTo.map { mapping in
            let parts = mapping.split(separator: "=", maxSplits: 1).map(String.init)
            return (parts[0], parts[1])
        }, uniquingKeysWith: { _, last in last })
        settings.resolver = dnsServer.flatMap(Self.resolver)
        settings.maxRequestBytes = maxRequestBytes
        settings.urlFilterBundleID = urlFilterBundleId
        settings.testNumber = testNumber
        settings.testName = testName
        return settings
    }

    /// Starts the config's service on loopback (admin listener on a free port), checks it, stops it. The service
    /// runs in a sandbox: its datasets are the config's, but every store it writes (keys, nonces, issuer and gateway
    /// keys, reports) is a new one in a temporary directory, the shared store is not used, and the gateway is on;
    /// nothing of the provider's state is read or written.
    private func runLocal(config: String) async throws -> DoctorReport {
        var logger = Logger(label: "callveil-doctor")
        logger.logLevel = .warning
        let sandbox = FileManager.default.temporaryDirectory.appendingPathComponent("callveil-doctor-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: sandbox, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: sandbox) }
        let sandboxed = try Self.sandboxed(try ServiceConfig.load(path: config), in: sandbox)
        let server = try await LookupServer(configPath: sandboxed, logger: logger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try server.makeApplication(host: "127.0.0.1", port: 0, admin: (nil, 0), onServerRunning: { continuation.yield($0) })
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw ValidationError("the local service did not start") }
        let base = "http://127.0.0.1:\(port)"
        let keysPath = server.gateway?.settings.keysPath ?? "/ohttp-configs", gatewayPath = server.gateway?.settings.gatewayPath ?? "/ohttp-gateway"
        var settings = settings(service: base, gateway: base + gatewayPath)
        settings.gatewayKeysURL = base + keysPath
        settings.local = true
        let report = await Doctor(settings).run()
        await group.triggerGracefulShutdown()
        _ = try? await running.value
        return report
    }

    /// `config` sandboxed in `directory` (`ServiceConfig.sandboxed(in:)`), written there as `service-config.json`,
    /// whose path is returned.
    static func sandboxed(_ config: ServiceConfig, in directory: String) throws -> String {
        let config = config.sandboxed(in: directory)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let path = "\(directory)/service-config.json"
        try encoder.encode(config).write(to: URL(fileURLWithPath: path))
        return path
    }
}
