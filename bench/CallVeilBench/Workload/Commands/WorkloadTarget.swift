import ArgumentParser
import Foundation
import ObliviousHTTP

/// The options every workload step that talks to the service shares: the directory and how to reach the service.
struct WorkloadTarget: ParsableArguments {
    static let userAgent = "com.apple.ciphermld/1.0 iOS/18.2 CallVeil"

    @Option(help: "The workload directory.") var dir: String
    @Option(help: "The service's base URL (default: the one prepare used).") var url: String?
    @Option(help: "PEM file of a CA to trust (a test certificate).") var ca: String?
    @Option(help: "gateway (Oblivious HTTP, as Apple's relay sends) or direct.") var via = "gateway"
    @Option(help: "Connections (HTTP/2 over TLS: one each).") var connections = 4

    func transport(_ manifest: WorkloadManifest) throws -> WorkloadTransport {
        var gateway: OHTTPKeyConfig?
        switch via {
        case "direct": gateway = nil
        case "gateway":
            guard let keys = manifest.gatewayKeys, let config = try OHTTPKeyConfig.decodeList(try WorkloadManifest.decode(keys)).first else {
                throw WorkloadError("the service had no gateway when the workload was prepared")
            }
            gateway = config
        default: throw ValidationError("--via gateway|direct")
        }
        return WorkloadTransport(baseURL: url ?? manifest.url, connections: connections, ca: ca, gateway: gateway)
    }
}
