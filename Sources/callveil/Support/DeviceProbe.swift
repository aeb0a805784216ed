import AsyncHTTPClient
import Dataset
import Foundation
import LookupClient
import NIOSSL

/// A device as `query`, `canary` and `doctor` act it: Privacy Pass tokens from the issuer, config sync, key upload
/// and the encrypted lookups of a number in the block and identity use cases, directly or through an Oblivious
/// HTTP gateway.
struct DeviceProbe {
    /// Where the device talks to and as whom.
    struct Settings: Sendable {
        var url: String
        var issuerURL: String?
        var gatewayURL: String?
        var gatewayKeysURL: String?
        var userToken: String?
        var userAgent = "com.apple.ciphermld/1.0 iOS/18.2 callveil"
        var userIdentifier: String?
        var ca: String?
        var blockUseCase: String
        var identityUseCase: String
    }

    /// One number's answers.
    struct Answer: Sendable {
        var block: [UInt8]?
        var identity: [UInt8]?
        /// Bytes of the last key upload, and the bytes sent and received in all.
        var keyUploadBytes: Int
        var bytesSent: Int
        var bytesReceived: Int
    }

    let settings: Settings
    let client: HTTPClient
    private let ownsClient: Bool

    /// A probe with its own HTTP client when a CA is given (else the shared one).
    init(_ settings: Settings) {
        self.settings = settings
        if let ca = settings.ca {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(ca)]
            client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            ownsClient = true
        } else {
            client = .shared
            ownsClient = false
        }
    }

    /// A new device (a fresh User-Identifier unless one is set), routed through the gateway when one is set.
    func makeDevice() async throws -> LookupDevice {
        var http = LookupHTTPClient(baseURL: settings.url, client: client)
        var issuer = LookupHTTPClient(baseURL: settings.issuerURL ?? settings.url, client: client)
        if let gatewayURL = settings.gatewayURL {
            let route = try await ObliviousRoute.fetch(keysURL: settings.gatewayKeysURL ?? Self.defaultKeysURL(gatewayURL: gatewayURL),
                                                       gatewayURL: gatewayURL, client: client)
            http.oblivious = route
            issuer.oblivious = route
        }
        let authorization: any AuthorizationProvider = settings.userToken.map {
            PrivacyPassAuthorization(issuer: issuer, userToken: $0)
        } ?? NoAuthorization()
        return LookupDevice(http: http, userIdentifier: settings.userIdentifier ?? UUID().uuidString, userAgent: settings.userAgent,
                            authorization: authorization)
    }

    /// The key configuration URL beside a gateway URL (`…/ohttp-gateway` → `…/ohttp-configs`).
    static func defaultKeysURL(gatewayURL: String) -> String {
        guard let slash = gatewayURL.lastIndex(of: "/"), gatewayURL[..<slash].contains("//") else { return gatewayURL + "/ohttp-configs" }
        return gatewayURL[..<slash] + "/ohttp-configs"
    }

    /// Syncs the config and looks `number` up in both use cases with `device`.
    func lookUp(_ number: String, device: LookupDevice) async throws -> Answer {
        guard let normalized = IdentityDataset.normalize(number) else { throw ProbeError("\(number) is not an E.164 number") }
        try await device.syncConfig([settings.blockUseCase, settings.identityUseCase])
        let keyword = Array(normalized.utf8)
        let block = try await device.lookup(keyword, in: settings.blockUseCase)
        let identity = try await device.lookup(keyword, in: settings.identityUseCase)
        return Answer(block: block, identity: identity, keyUploadBytes: await device.lastKeyUploadBytes,
                      bytesSent: await device.bytesSent, bytesReceived: await device.bytesReceived)
    }

    /// Closes the probe's own client.
    func shutdown() async {
        if ownsClient { try? await client.shutdown() }
    }
}

/// A probe's failure, said plainly.
struct ProbeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
