import Dataset
import Foundation
import LookupClient
import Onboarding
import ServiceCore
import ServiceTestSupport
import Testing
import URLFilter

/// `callveil doctor` against a local deployment as Apple would see it: the service, issuer and gateway on
/// `https://*.callveil.test` (port 443 of a loopback address of its own, a test CA), Apple's test identity in the
/// data, and a DNS server with the TXT record. Each misconfiguration fails exactly its own check. Needs root (443).
@Suite("callveil doctor", .serialized)
struct DoctorTests {
    /// A deployment for the doctor: the service (TLS on `address:443`, or plain behind a terminator), its DNS server.
    struct Deployment {
        let server: TestServer
        let dns: OHTTPInteropClient.Listening
        let terminator: OHTTPInteropClient.Listening?
        let directory: String
        let address: String

        func settings(service: String = "https://service.callveil.test", issuer: String = "https://issuer.callveil.test",
                      token: String = "AAAA") -> Doctor.Settings {
            var settings = Doctor.Settings(serviceURL: service, issuerURL: issuer, gatewayURL: "https://gateway.callveil.test/ohttp-gateway",
                                           gatewayKeysURL: "https://gateway.callveil.test/ohttp-configs", bundleID: "net.example.lookup",
                                           userToken: token)
            settings.ca = "\(directory)/cert.pem"
            settings.hostOverrides = ["service.callveil.test": address, "issuer.callveil.test": address, "gateway.callveil.test": address]
            settings.resolver = TXTResolver(server: "127.0.0.1", port: UInt16(dns.port))
            settings.maxRequestBytes = 1 << 20
            settings.urlFilterBundleID = "net.example.filter"
            return settings
        }

        func stop() async {
            terminator?.stop()
            dns.stop()
            await server.stop()
        }
    }

    /// A loopback address of this test's own, so port 443 is free.
    static func address() -> String { "127.44.\(Int.random(in: 1...250)).\(Int.random(in: 1...250))" }

    /// Starts a deployment. `testIdentity`: the data holds +14085551212; `txt`: the TXT records served;
    /// `h2`: TLS by the service itself (ALPN h2 and http/1.1), else by a terminator offering http/1.1 only;
    /// `tokens`: the config's user tokens.
    static func deploy(testIdentity: Bool = true, testURL: Bool = true,
                       txt: [String] = ["apple-live-caller-id-lookup=net.example.lookup", "apple-url-filter=net.example.filter"],
                       h2: Bool = true, tokens: [String] = ["AAAA"]) async throws -> Deployment {
        let directory = try temporaryDirectory()
        let address = address()
        _ = try await OHTTPInteropClient.run(["make-cert", directory, "--dns", "*.callveil.test"])
        let data = try DemoDataset.make(in: directory, count: 40, testIdentity: testIdentity)
        // The URL-filter use case, with Apple's test URL when `testURL`.
        let urls = ["tracker.example", "ads.example/banner"] + (testURL ? ["www.apple.com/url-filter-test"] : [])
        let list = try URLFilterList(text: urls.joined(separator: "\n"))
        _ = try list.write(to: "\(directory)/url-filter", falsePositiveRate: 0.01)
        _ = try DatasetBuilder(options: .init(preset: "n_4096_logq_27_28_28_logt_5", shardCount: 1), directory: "\(directory)/url-db",
                               stem: "urls", threads: 1).build(input: "\(directory)/url-filter/urls.binpb")
        let urlFilter = ServiceConfig.UseCase(name: "net.example.filter.url.filtering", manifest: "\(directory)/url-db/urls.manifest.json")
        let config = try writeServiceConfig(in: directory, usecases: data.useCases + [urlFilter]) { config in
            config.users = [.init(tier: "tier1", tokens: tokens)]
            config.gateway = .init()
            if h2 {
                config.http?.protocol = "tls"
                config.http?.tlsCertificateFile = "\(directory)/cert.pem"
                config.http?.tlsKeyFile = "\(directory)/key.pem"
            }
        }
        let server = try await TestServer.start(configPath: config, host: h2 ? address : "127.0.0.1", port: h2 ? 443 : 0)
        let terminator = h2 ? nil : try await OHTTPInteropClient.Listening.start([
            "terminate", "--listen", "\(address):443", "--target", String(server.url.split(separator: ":").last ?? ""),
            "--cert", "\(directory)/cert.pem", "--key", "\(directory)/key.pem", "--alpn", "http/1.1"])
        let dns = try await OHTTPInteropClient.Listening.start(["dns"] + txt.flatMap { ["--txt", "service.callveil.test=\($0)"] })
        return Deployment(server: server, dns: dns, terminator: terminator, directory: directory, address: address)
    }

    /// Runs the doctor and returns the ids of the failed checks (the report printed).
    static func failed(_ settings: Doctor.Settings, _ label: String) async -> [String] {
        let report = await Doctor(settings).run()
        print("doctor (\(label)):\n\(report.rendered())")
        return report.failed.map(\.id)
    }

    @Test("a deployment that follows Apple's checklist passes every check, and the form gets the sizes")
    func allPass() async throws {
        let deployment = try await Self.deploy()
        let report = await Doctor(deployment.settings()).run()
        print(report.rendered())
        #expect(report.failed.isEmpty)
        #expect(!report.checks.contains { $0.outcome == .skipped })
        let form = Dictionary(report.form, uniquingKeysWith: { a, _ in a })
        #expect(form["/key request / response bytes"] != nil)
        #expect(form["/queries net.example.lookup.block request / response bytes"] != nil)
        #expect(form["DNS TXT record on the service host"] == "apple-live-caller-id-lookup=net.example.lookup")
        #expect(report.checks.contains { $0.id == "lookup.url-filter-test" && $0.outcome == .pass })
        #expect(report.checks.contains { $0.id == "dns.txt-url-filter" && $0.outcome == .pass })
        await deployment.stop()
    }

    @Test("each misconfiguration fails exactly its own check")
    func misconfigurations() async throws {
        let deployment = try await Self.deploy()
        #expect(await Self.failed(deployment.settings(service: "https://service.callveil.test/lookup"), "path") == ["url.service"])
        #expect(await Self.failed(deployment.settings(issuer: "https://issuer.callveil.test/"), "trailing /") == ["url.issuer"])
        var limited = deployment.settings()
        limited.maxRequestBytes = 200_000
        #expect(await Self.failed(limited, "key over the limit") == ["size.key"])
        var otherBundle = deployment.settings()
        otherBundle.bundleID = "net.example.other"
        #expect(await Self.failed(otherBundle, "use case names").contains("usecases.names"))
        await deployment.stop()

        let noIdentity = try await Self.deploy(testIdentity: false)
        #expect(await Self.failed(noIdentity.settings(), "no test identity") == ["lookup.test-identity"])
        await noIdentity.stop()

        let noTXT = try await Self.deploy(txt: ["v=spf1 -all", "apple-url-filter=net.example.filter"])
        #expect(await Self.failed(noTXT.settings(), "no TXT record") == ["dns.txt"])
        await noTXT.stop()

        let noTestURL = try await Self.deploy(testURL: false)
        #expect(await Self.failed(noTestURL.settings(), "no test URL") == ["lookup.url-filter-test"])
        await noTestURL.stop()

        let token = "not base64!"
        let badToken = try await Self.deploy(tokens: [token])
        #expect(await Self.failed(badToken.settings(token: token), "token") == ["token.user-token-format"])
        await badToken.stop()

        let http1 = try await Self.deploy(h2: false)
        #expect(await Self.failed(http1.settings(), "no h2") == ["tls.gateway-h2"])
        await http1.stop()
    }

    @Test("local mode: the provider's config checked in a sandbox; none of its stores is created or touched")
    func localSandbox() async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 30, testIdentity: true)
        let config = try writeServiceConfig(in: directory, usecases: data.useCases) { config in
            config.http?.protocol = "tls"  // the provider's public settings: the sandbox serves plain HTTP on loopback
            config.http?.tlsCertificateFile = "\(directory)/missing-cert.pem"
            config.http?.tlsKeyFile = "\(directory)/missing-key.pem"
        }
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: directory))
        let sandbox = try temporaryDirectory()
        let sandboxed = try ServiceConfig.load(path: config).sandboxed(in: sandbox)
        let path = "\(sandbox)/service-config.json"
        try JSONEncoder().encode(sandboxed).write(to: URL(fileURLWithPath: path))
        let server = try await TestServer.start(configPath: path)
        var settings = Doctor.Settings(serviceURL: server.url, issuerURL: server.url, gatewayURL: server.url + "/ohttp-gateway",
                                       gatewayKeysURL: server.url + "/ohttp-configs", bundleID: "net.example.lookup", userToken: "AAAA")
        settings.local = true
        let report = await Doctor(settings).run()
        print(report.rendered())
        #expect(report.failed.isEmpty)
        #expect(report.checks.filter { $0.outcome == .skipped }.map(\.id).sorted()
                == ["dns.txt", "tls.gateway-h2", "url.gateway", "url.gateway-keys", "url.issuer", "url.service"])
        await server.stop()
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == before, "the provider's directory is unchanged")
        let written = Set(try FileManager.default.contentsOfDirectory(atPath: sandbox))
        #expect(written.isSuperset(of: ["keys.sqlite", "nonces.sqlite", "issuer-keys", "gateway-keys"]), "\(written.sorted())")
    }

    @Test("URL shapes: https on 443, a bare subdomain for the service and the issuer, no trailing slash")
    func urlShapes() {
        #expect(Doctor.urlProblem("https://service.example.net", pathAllowed: false) == nil)
        #expect(Doctor.urlProblem("https://gateway.example.net/ohttp-gateway", pathAllowed: true) == nil)
        #expect(Doctor.urlProblem("http://service.example.net", pathAllowed: false) == "not https")
        #expect(Doctor.urlProblem("https://service.example.net:8443", pathAllowed: false) == "port 8443, not 443")
        #expect(Doctor.urlProblem("https://example.net/lookup", pathAllowed: false)?.hasPrefix("has a path") == true)
        #expect(Doctor.urlProblem("https://example.net/", pathAllowed: false) == "ends with '/'")
        #expect(Doctor.urlProblem("https://gateway.example.net/ohttp-gateway/", pathAllowed: true) == "ends with '/'")
    }
}
