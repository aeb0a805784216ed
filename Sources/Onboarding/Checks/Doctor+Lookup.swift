import AsyncHTTPClient
import Foundation
import LookupClient
import LookupProtocol
import ObliviousHTTP
import PIR
import URLFilter

extension Doctor {
    /// The sizes of one device session, for the size checks and the form.
    struct SessionSizes: Sendable {
        /// Every exchange, through the gateway.
        var exchanges: [ExchangeLog.Exchange] = []
        /// `/queries` of each use case (block first).
        var queries: [(useCase: String, exchange: ExchangeLog.Exchange)] = []
        /// `/key` request bodies for each key compression setting, the one in use marked.
        var keyBodies: [(compression: String, bytes: Int, current: Bool)] = []
    }

    /// The gateway's key configuration parses and offers a suite devices use.
    func gatewayKeyConfigCheck() async -> (OHTTPKeyConfig?, DoctorCheck) {
        let id = "gateway.key-config", title = "gateway key configuration"
        let probe = makeProbe()
        defer { Task { await probe.shutdown() } }
        do {
            let route = try await ObliviousRoute.fetch(keysURL: settings.gatewayKeysURL, gatewayURL: settings.gatewayURL, client: probe.client)
            let suites = route.keyConfig.suites
            guard suites.contains(where: { $0.kem == 0x0020 && $0.kdf == 0x0001 }) else {
                return (nil, .fail(id, title, "key \(route.keyConfig.keyID) offers no X25519/HKDF-SHA256 suite",
                                   fix: "offer X25519-SHA256-AES128GCM (gateway.suites)"))
            }
            return (route.keyConfig, .pass(id, title, "key id \(route.keyConfig.keyID), \(suites.count) suite(s)"))
        } catch {
            return (nil, .fail(id, title, "\(settings.gatewayKeysURL): \(error)",
                               fix: "serve application/ohttp-keys at the configuration resource (callveil: gateway.configPath)"))
        }
    }

    /// iOS sends the user token as `Authorization: Bearer <token>`; a token that is not base64 is not fetched with.
    func userTokenFormatCheck() -> DoctorCheck {
        let id = "token.user-token-format", title = "user token iOS sends"
        let token = settings.userToken
        let base64 = !token.isEmpty && token.count % 4 == 0 && Data(base64Encoded: token) != nil
        guard base64 else {
            return .fail(id, title, "the token is not standard base64 (\(token.count) characters)",
                         fix: "issue user tokens as standard base64 (A–Z, a–z, 0–9, +, /, = padding), e.g. openssl rand -base64 32")
        }
        return .pass(id, title, "base64, \(token.count) characters")
    }

    /// The issuer's directory and the user's token key, the use case names, and a full device lookup of the test
    /// identity, all through the gateway.
    func lookupChecks(gatewayUsable keyConfig: OHTTPKeyConfig?) async -> (checks: [DoctorCheck], sizes: SessionSizes) {
        let ids = [("issuer.directory", "token issuer directory and the user's token key"),
                   ("usecases.names", "use cases \(settings.bundleID).block and .identity"),
                   ("lookup.test-identity", "device lookup of \(settings.testNumber) (\(settings.testName))")]
        guard let keyConfig else {
            return (ids.map { .skipped($0.0, $0.1, "the gateway's key configuration is unusable") }, SessionSizes())
        }
        let probe = makeProbe()
        defer { Task { await probe.shutdown() } }
        var checks: [DoctorCheck] = []
        var sizes = SessionSizes()
        let route = ObliviousRoute(gatewayURL: settings.gatewayURL, keyConfig: keyConfig)
        var issuer = LookupHTTPClient(baseURL: Self.origin(of: settings.issuerURL), client: probe.client)
        issuer.oblivious = route
        issuer.log = probe.log
        var service = LookupHTTPClient(baseURL: Self.origin(of: settings.serviceURL), client: probe.client)
        service.oblivious = route
        service.log = probe.log

        // The issuer: directory, then the token key for this user token.
        do {
            let (status, body) = try await issuer.send(method: .GET, path: "/.well-known/private-token-issuer-directory", headers: [], body: nil)
            guard status == 200, let json = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                  let keys = json["token-keys"] as? [[String: Any]], !keys.isEmpty else {
                throw ProbeError("the issuer directory answered HTTP \(status) without token keys")
            }
            let (keyStatus, _) = try await issuer.send(method: .GET, path: "/token-key-for-user-token",
                                                       headers: [("Authorization", "Bearer \(settings.userToken)")], body: nil)
            guard keyStatus == 200 else {
                throw ProbeError("/token-key-for-user-token answered HTTP \(keyStatus) for the given bearer token")
            }
            checks.append(.pass(ids[0].0, ids[0].1, "\(keys.count) token key(s); the bearer token has a key"))
        } catch {
            checks.append(.fail(ids[0].0, ids[0].1, "\(error)",
                                fix: "serve the issuer on the issuer URL, and list the bearer token under users[].tokens of the service config"))
            checks += ids.dropFirst().map { .skipped($0.0, $0.1, "no tokens without the issuer") }
            return (checks, sizes)
        }

        let block = "\(settings.bundleID).block", identity = "\(settings.bundleID).identity"
        let device = LookupDevice(http: service, userAgent: "com.apple.ciphermld/1.0 iOS/26.4 callveil-doctor",
                                  authorization: PrivacyPassAuthorization(issuer: issuer, userToken: settings.userToken))
        do {
            try await device.syncConfig([block, identity])
            checks.append(.pass(ids[1].0, ids[1].1, "both offered by /config"))
        } catch let error as LookupClientError where error.code == .unknownUseCase {
            checks.append(.fail(ids[1].0, ids[1].1, "the service does not offer \(error.body)",
                                fix: "name the use cases <extension bundle id>.block and <extension bundle id>.identity in the service config"))
            checks.append(.skipped(ids[2].0, ids[2].1, "no use cases to look up in"))
            sizes.exchanges = probe.log.exchanges
            return (checks, sizes)
        } catch {
            checks.append(.fail(ids[1].0, ids[1].1, "config sync failed: \(error)", fix: "see the service's log for the refusal"))
            checks.append(.skipped(ids[2].0, ids[2].1, "no config"))
            sizes.exchanges = probe.log.exchanges
            return (checks, sizes)
        }
        do {
            let keyword = Array(settings.testNumber.utf8)
            var answers: [[UInt8]?] = []
            for useCase in [block, identity] {
                let before = probe.log.exchanges.count
                answers.append(try await device.lookup(keyword, in: useCase))
                if let query = probe.log.exchanges.dropFirst(before).last(where: { $0.path == "/queries" }) {
                    sizes.queries.append((useCase, query))
                }
            }
            let name = answers[1].flatMap { try? CallIdentity(serializedBytes: $0) }?.name
            if name == settings.testName {
                let blocked = answers[0] == [1] ? "blocked" : "not blocked"
                checks.append(.pass(ids[2].0, ids[2].1, "identity \"\(settings.testName)\", \(blocked)"))
            } else {
                checks.append(.fail(ids[2].0, ids[2].1,
                                    answers[1] == nil ? "the identity use case has no entry for the number" : "the identity answer carries another name",
                                    fix: "add \(settings.testNumber),\(settings.testName) to the identity data (callveil build-db), process and reload"))
            }
        } catch {
            checks.append(.fail(ids[2].0, ids[2].1, "\(error)", fix: "see the service's log for the refusal"))
        }
        if let app = settings.urlFilterBundleID { checks.append(await urlFilterCheck(device: device, app: app)) }
        sizes.exchanges = probe.log.exchanges
        // Each compression's largest /key body over the use cases' key configs.
        let perUseCase = [await keyBodies(device: device, useCase: block), await keyBodies(device: device, useCase: identity)]
        sizes.keyBodies = KeyCompression.allCases.compactMap { compression in
            let bodies = perUseCase.flatMap { $0 }.filter { $0.compression == compression.rawValue }
            guard let largest = bodies.max(by: { $0.bytes < $1.bytes }) else { return nil }
            return (compression.rawValue, largest.bytes, bodies.allSatisfy(\.current))
        }
        return (checks, sizes)
    }

    /// The URL-filter test entry: `www.apple.com/url-filter-test` answers the value 1 in `<app>.url.filtering`.
    func urlFilterCheck(device: LookupDevice, app: String) async -> DoctorCheck {
        let id = "lookup.url-filter-test", title = "URL filter lookup of www.apple.com/url-filter-test"
        let useCase = "\(app).url.filtering"
        do {
            try await device.syncConfig([useCase])
            let keyword = Array((try URLNormalizer.normalize("www.apple.com/url-filter-test")).utf8)
            let value = try await device.lookup(keyword, in: useCase)
            guard value == [1] else {
                return .fail(id, title, value == nil ? "not in \(useCase)" : "the value is not 1",
                             fix: "add www.apple.com/url-filter-test to the URL list (callveil url-filter build), process and reload")
            }
            return .pass(id, title, "\(useCase) answers 1")
        } catch let error as LookupClientError where error.code == .unknownUseCase {
            return .fail(id, title, "the service does not offer \(useCase)", fix: "name the URL-filter use case <app bundle id>.url.filtering")
        } catch {
            return .fail(id, title, "\(error)", fix: "see the service's log for the refusal")
        }
    }

    /// A probe for this deployment (CA, host overrides).
    func makeProbe() -> DeviceProbe {
        DeviceProbe(.init(url: settings.serviceURL, issuerURL: settings.issuerURL, gatewayURL: settings.gatewayURL,
                          gatewayKeysURL: settings.gatewayKeysURL, userToken: settings.userToken, ca: settings.ca,
                          blockUseCase: "\(settings.bundleID).block", identityUseCase: "\(settings.bundleID).identity",
                          hostOverrides: settings.hostOverrides))
    }
}
