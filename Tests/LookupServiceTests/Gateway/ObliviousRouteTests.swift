import Foundation
import LookupClient
import LookupEngine
import ServiceCore
import ServiceTestSupport
import Testing

/// CallVeil's own Oblivious HTTP client route (`callveil query --gateway-url`, the canary): every request of a
/// device, tokens included, through the service's gateway, with the right answers; the gateway counts them.
@Suite("Oblivious HTTP client route")
struct ObliviousRouteTests {
    @Test("a device through ObliviousRoute gets the answers of a direct one; the gateway saw every request")
    func deviceThroughGateway() async throws {
        let (server, data, _, _) = try await ObliviousGatewayTests.start(protocol: "http1")
        var http = LookupHTTPClient(baseURL: server.url)
        http.oblivious = try await ObliviousRoute.fetch(keysURL: server.url + "/ohttp-configs", gatewayURL: server.url + "/ohttp-gateway")
        let device = LookupDevice(http: http, userIdentifier: UUID().uuidString, authorization: PrivacyPassAuthorization(issuer: http, userToken: "AAAA"))
        try await device.syncConfig([DemoDataset.block, DemoDataset.identity])
        for record in data.records.prefix(3) {
            let keyword = Array(record.number.utf8)
            #expect(try await device.lookup(keyword, in: DemoDataset.block) == [record.block ? 1 : 0])
            #expect(try await device.lookup(keyword, in: DemoDataset.identity) == (try record.callIdentity()))
        }
        let metrics = String(decoding: server.server.metrics.exposition(), as: UTF8.self)
        let through = metrics.split(separator: "\n").first { $0.hasPrefix("callveil_ohttp_requests_total{result=\"ok\"}") }
        let count = through.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        #expect(count >= 10, "config, token directory, token key, issue, key and six queries went through the gateway: \(count)")
        // A wrong key configuration: the gateway cannot open the request, and the client says so with a code.
        var wrong = http
        wrong.oblivious = ObliviousRoute(gatewayURL: server.url + "/ohttp-gateway",
                                         keyConfig: .init(keyID: 99, kem: 0x20, publicKey: [UInt8](repeating: 9, count: 32), algorithms: [(1, 1)]))
        await #expect(throws: LookupClientError.self) { _ = try await wrong.send(path: "/config", headers: [], body: []) }
        await server.stop()
    }
}
