import Foundation

extension Doctor {
    /// The URL shapes Apple requires: HTTPS on 443, and for the service and issuer a bare subdomain (custom paths
    /// were removed in iOS and macOS 26.4) without a trailing `/`.
    func urlChecks() -> [DoctorCheck] {
        let urls: [(String, String, String, Bool)] = [
            ("url.service", "service URL", settings.serviceURL, false),
            ("url.issuer", "token issuer URL", settings.issuerURL, false),
            ("url.gateway", "Oblivious HTTP gateway resource", settings.gatewayURL, true),
            ("url.gateway-keys", "gateway key configuration resource", settings.gatewayKeysURL, true),
        ]
        return urls.map { id, name, url, pathAllowed in
            if settings.local { return .skipped(id, "\(name) shape", "local mode") }
            if let problem = Self.urlProblem(url, pathAllowed: pathAllowed) {
                return .fail(id, "\(name) shape", "\(url): \(problem)",
                             fix: pathAllowed ? "use https://<host> on port 443 with no trailing '/'"
                                 : "use a subdomain of its own with nothing after the host, e.g. https://service.example.net")
            }
            return .pass(id, "\(name) shape", url)
        }
    }

    /// What is wrong with `url` for Apple's form, or nil.
    public static func urlProblem(_ url: String, pathAllowed: Bool) -> String? {
        guard let parsed = URLComponents(string: url), let host = parsed.host, !host.isEmpty else { return "not a URL" }
        if parsed.scheme != "https" { return "not https" }
        if let port = parsed.port, port != 443 { return "port \(port), not 443" }
        if parsed.query != nil || parsed.fragment != nil { return "has a query or fragment" }
        if url.hasSuffix("/") { return "ends with '/'" }
        if !pathAllowed, !parsed.path.isEmpty { return "has a path (\(parsed.path)); iOS 26.4 and later take subdomains only" }
        return nil
    }
}
