import Foundation

extension Doctor {
    /// The TXT records on the service's host that prove the provider's intent:
    /// `apple-live-caller-id-lookup=<extension bundle id>`, and `apple-url-filter=<app bundle id>` for URL filtering.
    func dnsChecks() -> [DoctorCheck] {
        var checks = [dnsCheck(id: "dns.txt", wanted: "apple-live-caller-id-lookup=\(settings.bundleID)")]
        if let app = settings.urlFilterBundleID { checks.append(dnsCheck(id: "dns.txt-url-filter", wanted: "apple-url-filter=\(app)")) }
        return checks
    }

    /// The TXT record `wanted` on the service's host.
    func dnsCheck(id: String, wanted: String) -> DoctorCheck {
        let title = "DNS TXT record on the service host"
        if settings.local { return .skipped(id, title, "local mode") }
        guard let host = Self.host(of: settings.serviceURL) else {
            return .fail(id, title, "the service URL does not parse", fix: "give the service URL as https://<host>")
        }
        let resolver = settings.resolver ?? .system()
        do {
            let records = try resolver.txt(host)
            guard records.contains(wanted) else {
                return .fail(id, title, records.isEmpty ? "\(host) has no TXT record" : "\(host) has TXT \(records.map { "\"\($0)\"" }.joined(separator: ", ")), not the one wanted",
                             fix: "add the TXT record \"\(wanted)\" to \(host)")
            }
            return .pass(id, title, "\(host): \"\(wanted)\"")
        } catch {
            return .fail(id, title, "\(host): \(error)", fix: "add the TXT record \"\(wanted)\" to \(host) (resolver \(resolver.server))")
        }
    }
}
