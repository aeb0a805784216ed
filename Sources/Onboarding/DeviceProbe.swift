import AsyncHTTPClient
import Dataset
import Foundation
import LookupClient
import NIOSSL

/// A device as `query`, `canary` and `doctor` act it: Privacy Pass tokens from the issuer, config sync, key upload
/// and the encrypted lookups of a number in the block and identity use cases, directly or through an Oblivious
/// HTTP gateway.
public struct DeviceProbe: Sendable {
    /// Where the device talks to and as whom.
    public struct Settings: Sendable {
        public var url: String
        public var issuerURL: String?
        public var gatewayURL: String?
        public var gatewayKeysURL: String?
        public var userToken: String?
        public var userAgent: String
        public var userIdentifier: String?
        public var ca: String?
        public var blockUseCase: String
        public var identityUseCase: String
        /// Host name → address to connect to instead of resolving (a deployment not yet in DNS; tests).
        public var hostOverrides: [String: String]

        /// Settings as given.
        public init(url: String, issuerURL: String? = nil, gatewayURL: String? = nil, gatewayKeysURL: String? = nil,
                    userToken: String? = nil, userAgent: String = "com.apple.ciphermld/1.0 iOS/18.2 callveil",
                    userIdentifier: String? = nil, ca: String? = nil, blockUseCase: String, identityUseCase: String,
                    hostOverrides: [String: String] = [:]) {
            self.url = url
            self.issuerURL = issuerURL
            self.gatewayURL = gatewayURL
            self.gatewayKeysURL = gatewayKeysURL
            self.userToken = userToken
            self.userAgent = userAgent
            self.userIdentifier = userIdentifier
            self.ca = ca
            self.blockUseCase = blockUseCase
            self.identityUseCase = identityUseCase
            self.hostOverrides = hostOverrides
        }
    }

    /// One number's answers.
    public struct Answer: Sendable {
        public var block: [UInt8]?
        public var identity: [UInt8]?
        /// Bytes of the last key upload, and the bytes sent and received in all.
        public var keyUploadBytes: Int
        public var bytesSent: Int
        public var bytesReceived: Int
    }

    public let settings: Settings
    /// The HTTP client (its own with a CA or host overrides, else the shared one).
    public let client: HTTPClient
    /// Every exchange's sizes.
    public let log = ExchangeLog()
    private let ownsClient: Bool

    /// A probe with its own HTTP client when a CA or host overrides are given (else the shared one).
    public init(_ settings: Settings) {
        self.settings = settings
        if settings.ca != nil || !settings.hostOverrides.isEmpty {
            var tls = TLSConfiguration.makeClientConfiguration()
            if let ca = settings.ca { tls.additionalTrustRoots = [.file(ca)] }
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.dnsOverride = settings.hostOverrides
            client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            ownsClient = true
        } else {
            client = .shared
            ownsClient = false
        }
    }

    /// A new device (a fresh User-Identifier unless one is set), routed through the gateway when one is set.
    public func makeDevice() async throws -> LookupDevice {
        var http = LookupHTTPClient(baseURL: settings.url, client: client)
        var issuer = LookupHTTPClient(baseURL: settings.issuerURL ?? settings.url, client: client)
        http.log = log
        issuer.log = log
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
    public static func defaultKeysURL(gatewayURL: String) -> String {
        guard let slash = gatewayURL.lastIndex(of: "/"), gatewayURL[..<slash].contains("//") else { return gatewayURL + "/ohttp-configs" }
        return gatewayURL[..<slash] + "/ohttp-configs"
    }

    /// Syncs the config and looks `number` up in both use cases with `device`.
    public func lookUp(_ number: String, device: LookupDevice) async throws -> Answer {
        guard let normalized = IdentityDataset.normalize(number) else { throw ProbeError("\(number) is not an E.164 number") }
        try await device.syncConfig([settings.blockUseCase, settings.identityUseCase])
        let keyword = Array(normalized.utf8)
        let block = try await device.lookup(keyword, in: settings.blockUseCase)
        let identity = try await device.lookup(keyword, in: settings.identityUseCase)
        return Answer(block: block, identity: identity, keyUploadBytes: await device.lastKeyUploadBytes,
                      bytesSent: await device.bytesSent, bytesReceived: await device.bytesReceived)
    }

    /// Closes the probe's own client.
    public func shutdown() async {
        if ownsClient { try? await client.shutdown() }
    }
}

/// A probe's failure, said plainly.
public struct ProbeError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
