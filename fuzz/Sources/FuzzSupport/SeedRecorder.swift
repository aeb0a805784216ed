import Foundation
import Hummingbird
import LookupClient
import LookupProtocol
import LookupService
import PrivacyPass
import ServiceLifecycle
import Logging

/// Records real exchanges with the fixture server for the seed corpus: it listens on loopback for the time of
/// the recording, and a device-like client syncs its config, uploads its key and builds queries.
public enum SeedRecorder {
    /// What a device sent.
    public struct Exchange: Sendable {
        /// `/queries` bodies: a blocked number, a number that is not blocked, an absent number.
        public var queries: [[UInt8]]
        /// The `/key` body the device uploaded.
        public var key: [UInt8]
        /// The device's User-Identifier.
        public var user: String
    }

    /// Runs a device against the fixture over HTTP and returns what it sent.
    public static func record(server: LookupServer = Fixture.server) throws -> Exchange {
        try blocking {
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let app = try server.makeApplication(host: "127.0.0.1", port: 0, onAdminRunning: { _ in }, onServerRunning: { continuation.yield($0) })
            var logger = Logger(label: "callveil-fuzz-seeds")
            logger.logLevel = .critical
            let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
            let task = Task { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw CancellationError() }
            print("recording exchanges with the fixture on 127.0.0.1:\(port)")
            let http = LookupHTTPClient(baseURL: "http://127.0.0.1:\(port)")
            let device = LookupDevice(http: http, userIdentifier: Fixture.user,
                                      authorization: PrivacyPassAuthorization(issuer: http, userToken: Fixture.userToken))
            try await device.syncConfig([Fixture.useCase])
            // One real lookup per use case, so a cluster behind the fixture carries queries, replies and key fetches.
            _ = try await device.lookup(Array(Fixture.records[0].number.utf8), in: Fixture.useCase)
            var queries: [[UInt8]] = []
            for number in [Fixture.records[0].number, Fixture.records[1].number, "+15550000001"] {
                queries.append(try await device.queryRequest(Array(number.utf8), in: Fixture.useCase).serializedBytes())
            }
            let user = await device.userIdentifier
            let hash = server.registry.newest(Fixture.useCase)!.configuration.keyConfigHash
            let stored = try await server.keyStore.key(user: user, identifier: hash)!
            let key = try ProtoEvaluationKeys.with {
                $0.keys = [try .with {
                    $0.metadata = .with {
                        $0.identifier = Data(stored.identifier)
                        $0.timestamp = stored.timestamp
                    }
                    $0.evaluationKey = try .init(serializedBytes: stored.serialized)
                }]
            }.serializedBytes() as [UInt8]
            await group.triggerGracefulShutdown()
            _ = try? await task.value
            return Exchange(queries: queries, key: key, user: user)
        }.get()
    }

    /// A fresh token for the fixture's issuer, as the `Authorization` header value.
    public static func tokenHeader(issuerName: String = "callveil") throws -> String {
        let issuer = Fixture.server.privacyPass.keys!.issuer(forTier: "tier1")!
        let client = TokenClient(tokenKey: issuer.tokenKey)
        let (request, pending) = try client.request(challenge: TokenChallenge(issuerName: issuerName))
        let token = try client.finalize(response: try issuer.issue(request), pending: pending)
        return "PrivateToken token=" + Base64URL.encode(token.serialize())
    }

    /// A valid `/issue` body for the fixture's issuer.
    public static func issueBody() throws -> [UInt8] {
        let issuer = Fixture.server.privacyPass.keys!.issuer(forTier: "tier1")!
        return try TokenClient(tokenKey: issuer.tokenKey).request(challenge: TokenChallenge(issuerName: "callveil")).request.serialize()
    }
}
