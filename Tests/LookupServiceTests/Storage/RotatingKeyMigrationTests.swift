import Crypto
import Foundation
import Gateway
import LookupService
@testable import LookupStorage
import ObliviousHTTP
import PostgresNIO
import PrivacyPass
import ServiceTestSupport
import Testing

/// Issuer and gateway keys written by a build that kept them in two tables, and key directories written by one
/// that had two ring types, are read by the one rotating-key ring: a provider's keys survive the upgrade.
@Suite("Rotating keys across the upgrade")
struct RotatingKeyMigrationTests {
    @Test("A shared store at schema 6 with issuer and gateway keys migrates to one table; both rings load the same keys")
    func sharedStoreMigrates() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let sealing = StoreSealing(keyEncryptionKey: SymmetricKey(size: .bits256))
        let issuer = try TokenIssuer.generate()
        let gatewayKey = try OHTTPGatewayKey.generate(keyID: 7)
        let now = Date().timeIntervalSince1970
        try await TestPostgres.withConnection(to: settings) { connection in
            try await PostgresMigrations.apply(connection: connection, logger: TestPostgres.logger, upTo: 6)
            let keyID = issuer.tokenKey.keyID
            let sealedPEM = try sealing.seal(Array(issuer.pem.utf8), context: keyID)
            try await connection.query("""
                INSERT INTO issuer_keys (key_id, tier, not_before, not_after, sealed_pem)
                VALUES (\(Data(keyID)), 'tier1', \(now - 60), \(now + 20 * 86400), \(Data(sealedPEM)))
                """, logger: TestPostgres.logger)
            let sealedKey = try sealing.seal(Array(gatewayKey.privateKey.rawRepresentation),
                                             context: Array("callveil gateway key".utf8) + [7])
            try await connection.query("""
                INSERT INTO gateway_keys (key_id, created, not_after, sealed_key)
                VALUES (7, \(now - 60), \(now + 20 * 86400), \(Data(sealedKey)))
                """, logger: TestPostgres.logger)
        }
        let store = try await PostgresStore.connect(settings, sealing: sealing, logger: TestPostgres.logger)
        defer { Task { await store.shutdown() } }

        let issuers = try IssuerKeyRing()
        try await PostgresRotatingKeyStore<IssuerKeyKind>(store: store).refresh(issuers)
        #expect(issuers.liveKeyIDs == [issuer.tokenKey.keyID])
        #expect(issuers.acceptedKey(keyID: issuer.tokenKey.keyID)?.tier == "tier1")
        // Nothing is due, so ensuring keeps the migrated key rather than making a new one.
        #expect(try await !PostgresRotatingKeyStore<IssuerKeyKind>(store: store).ensure(issuers, groups: ["tier1"]))

        let gateways = try GatewayKeyRing(directory: nil)
        #expect(try await !gateways.ensure(sharedStore: store))
        #expect(gateways.entries.map(\.key.keyID) == [7])
        let request = try OHTTPClientRequest(try BinaryHTTPRequest(method: "GET", path: "/").encoded(), config: gatewayKey.config)
        #expect(throws: Never.self) { try gateways.gateway?.decapsulate(request.encapsulated) }
    }

    @Test("Key directories written by the two ring types are read: issuer `tier` records and gateway `keyID`/`created` records")
    func oldKeyDirectoriesLoad() throws {
        let now = Date().timeIntervalSince1970
        let issuerDirectory = try temporaryDirectory() + "/issuer-keys"
        try FileManager.default.createDirectory(atPath: issuerDirectory, withIntermediateDirectories: true)
        let issuer = try TokenIssuer.generate()
        try Data(issuer.pem.utf8).write(to: URL(fileURLWithPath: "\(issuerDirectory)/tier1-old.pem"))
        try Data("""
            [{"file": "tier1-old.pem", "notAfter": \(now + 20 * 86400), "notBefore": \(now - 60), "tier": "tier1"}]
            """.utf8).write(to: URL(fileURLWithPath: "\(issuerDirectory)/keys.json"))
        let issuers = try IssuerKeyRing(directory: issuerDirectory)
        #expect(issuers.issuer(forTier: "tier1")?.tokenKey.keyID == issuer.tokenKey.keyID)
        #expect(try !issuers.ensure(tiers: ["tier1"]))

        let gatewayDirectory = try temporaryDirectory() + "/gateway-keys"
        try FileManager.default.createDirectory(atPath: gatewayDirectory, withIntermediateDirectories: true)
        let gatewayKey = try OHTTPGatewayKey.generate(keyID: 200)
        try gatewayKey.privateKey.rawRepresentation.write(to: URL(fileURLWithPath: "\(gatewayDirectory)/gateway-200-1.x25519"))
        try Data("""
            [{"created": \(now - 60), "file": "gateway-200-1.x25519", "keyID": 200, "notAfter": \(now + 30 * 86400)}]
            """.utf8).write(to: URL(fileURLWithPath: "\(gatewayDirectory)/keys.json"))
        let gateways = try GatewayKeyRing(directory: gatewayDirectory)
        #expect(gateways.entries.map(\.key.keyID) == [200])
        #expect(try !gateways.ensure())
        let request = try OHTTPClientRequest(try BinaryHTTPRequest(method: "GET", path: "/").encoded(), config: gatewayKey.config)
        #expect(throws: Never.self) { try gateways.gateway?.decapsulate(request.encapsulated) }
    }
}
