import Foundation

/// Apple's onboarding checklist for Live Caller ID Lookup (pir-service-example's Onboarding page), run against a
/// deployment from the outside and through its Oblivious HTTP gateway as Apple's validation does: URL shapes, TLS
/// with ALPN `h2` on the gateway, the gateway's key configuration, the token issuer, a user token iOS sends, the
/// use case names, the test identity, the DNS TXT record, and the request and response sizes for the form.
public struct Doctor: Sendable {
    /// What to check.
    public struct Settings: Sendable {
        /// The service URL of the extension's context (a bare `https://` subdomain).
        public var serviceURL: String
        /// The token issuer URL (a bare `https://` subdomain).
        public var issuerURL: String
        /// The Oblivious HTTP gateway resource (where encapsulated requests go).
        public var gatewayURL: String
        /// The gateway's key configuration resource.
        public var gatewayKeysURL: String
        /// The Live Caller ID Lookup extension's bundle identifier (use cases `<id>.block` and `<id>.identity`).
        public var bundleID: String
        /// The bearer token Apple's validation sends (the app's user token).
        public var userToken: String
        /// A CA to trust besides the system's (a test deployment).
        public var ca: String?
        /// Host → address to connect to instead of resolving.
        public var hostOverrides: [String: String] = [:]
        /// The resolver for the TXT record (nil: the system's).
        public var resolver: TXTResolver?
        /// The largest request body the relay is stated to accept (the form's limit); nil: no limit checked.
        public var maxRequestBytes: Int?
        /// The URL-filter app's bundle identifier, when the deployment serves `NEURLFilter` (use case
        /// `<id>.url.filtering`, test URL `www.apple.com/url-filter-test` with the value 1, TXT `apple-url-filter=<id>`).
        public var urlFilterBundleID: String?
        /// Apple's test identity.
        public var testNumber = "+14085551212"
        public var testName = "Johnny Appleseed"
        /// Local mode: a service started from a config on loopback; URL, TLS and DNS checks are skipped.
        public var local = false

        /// Settings for `bundleID`'s deployment.
        public init(serviceURL: String, issuerURL: String, gatewayURL: String, gatewayKeysURL: String, bundleID: String,
                    userToken: String) {
            self.serviceURL = serviceURL
            self.issuerURL = issuerURL
            self.gatewayURL = gatewayURL
            self.gatewayKeysURL = gatewayKeysURL
            self.bundleID = bundleID
            self.userToken = userToken
        }
    }

    public let settings: Settings

    /// A doctor for `settings`.
    public init(_ settings: Settings) {
        self.settings = settings
    }

    /// Runs every check in Apple's order.
    public func run() async -> DoctorReport {
        var checks: [DoctorCheck] = []
        checks += urlChecks()
        checks.append(await gatewayALPNCheck())
        let (keyConfig, keyCheck) = await gatewayKeyConfigCheck()
        checks.append(keyCheck)
        checks.append(userTokenFormatCheck())
        let lookup = await lookupChecks(gatewayUsable: keyConfig)
        checks += lookup.checks
        checks += dnsChecks()
        checks += sizeChecks(lookup.sizes)
        return DoctorReport(checks: checks, form: formLines(lookup.sizes))
    }

    /// The host of a URL (nil when it does not parse).
    static func host(of url: String) -> String? { URL(string: url)?.host }

    /// `scheme://host[:port]` of a URL: what a device of iOS 26.4 or later talks to, since it takes no path (the
    /// path, if any, fails its URL check on its own).
    static func origin(of url: String) -> String {
        guard var parts = URLComponents(string: url), parts.host != nil else { return url }
        parts.path = ""
        parts.query = nil
        parts.fragment = nil
        return parts.string ?? url
    }
}
