import ConformanceSupport
import Crypto
import Foundation
import PrivacyPass
import Testing

/// Privacy Pass against the reference service's recorded material (`../shared/conformance/service/privacy-pass`
/// and every token in `exchanges.json`), plus round trips and forgeries with our own keys.
@Suite("Privacy Pass")
struct PrivacyPassConformanceTests {
    static func file(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: Conformance.root!.appendingPathComponent("service/privacy-pass/\(name)")))
    }

    @Test("SPKI parse and re-encode, key ids, recorded tokens verify, offline issuance is byte-identical",
          .enabled(if: Conformance.available, Comment(rawValue: Conformance.skipMessage)))
    func conformance() throws {
        let spki = try Self.file("token-key.user-token-AAAA.spki.der")
        let key = try TokenKey(spki: spki)
        #expect(key.spki == spki && spki.count == 342)
        #expect(key.keyID.map { String(format: "%02x", $0) }.joined() == "9accf4775d3a221e3fb273235d372f3699284b05abd89a9121cc346dd28c0f6a")
        #expect(key.truncatedKeyID == 0x6a)
        let token = try Token(deserialize: try Self.file("token.bin"))
        #expect(token.serialize() == (try Self.file("token.bin")))
        #expect(key.verify(token))
        #expect(token.challengeDigest == Array(SHA256.hash(data: try Self.file("token-challenge.bin"))))
        #expect(TokenChallenge(issuerName: "test").serialize() == (try Self.file("token-challenge.bin")))
        let header = String(decoding: try Self.file("authorization-header.txt"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(header == "PrivateToken token=" + Base64URL.encode(token.serialize()))

        // Every token the device sent during the capture verifies with the tier1 key; a flipped bit does not.
        let exchanges = try JSONSerialization.jsonObject(with: Data(contentsOf: Conformance.root!.appendingPathComponent("service/exchanges.json")))
        var verified = 0
        for exchange in exchanges as? [[String: Any]] ?? [] {
            let headers = exchange["client_headers"] as? [[String]] ?? []
            guard let auth = headers.first(where: { $0.count == 2 && $0[0] == "Authorization" })?[1],
                  auth.hasPrefix("PrivateToken token=") else { continue }
            let bytes = try #require(Base64URL.decode(auth.dropFirst("PrivateToken token=".count)))
            let recorded = try Token(deserialize: bytes)
            #expect(key.verify(recorded))
            var forged = bytes
            forged[forged.count - 7] ^= 0x40
            #expect(!key.verify(try Token(deserialize: forged)))
            verified += 1
        }
        #expect(verified == 42)  // every PIR request of the capture carried one

        // Our issuer with the offline key reproduces the reference's blind signature byte for byte.
        let pem = String(decoding: try Self.file("offline/issuer-private-key.pem"), as: UTF8.self)
        let issuer = try TokenIssuer(pem: pem)
        #expect(issuer.tokenKey.spki == (try Self.file("offline/token-key.spki.der")))
        let response = try issuer.issue(try TokenRequest(deserialize: try Self.file("offline/token-request.bin")))
        #expect(response == (try Self.file("offline/token-response.bin")))
        let offlineToken = try Token(deserialize: try Self.file("offline/token.bin"))
        #expect(issuer.tokenKey.verify(offlineToken))
        #expect(!key.verify(offlineToken))
        print("checked service/privacy-pass: SPKI, key id, token.bin, \(verified) recorded tokens, offline issuance byte-identical")
    }

    @Test("Issuance round trip; forged, wrong-key and malformed inputs are refused")
    func roundTrip() throws {
        let issuer = try TokenIssuer.generate()
        let other = try TokenIssuer.generate()
        let client = TokenClient(tokenKey: try TokenKey(spki: issuer.tokenKey.spki))
        let (request, pending) = try client.request(challenge: TokenChallenge(issuerName: "callveil"))
        #expect(request.serialize().count == 259)
        let token = try client.finalize(response: try issuer.issue(try TokenRequest(deserialize: request.serialize())), pending: pending)
        #expect(token.serialize().count == 354)
        #expect(issuer.tokenKey.verify(token))
        #expect(!other.tokenKey.verify(token))
        var forged = token.serialize()
        forged[10] ^= 1  // the nonce is signed
        #expect(!issuer.tokenKey.verify(try Token(deserialize: forged)))

        #expect(throws: PrivacyPassError.self) { try TokenRequest(deserialize: [0, 2]) }
        #expect(throws: PrivacyPassError.unsupportedTokenType(1)) {
            try issuer.issue(TokenRequest(tokenType: 1, truncatedTokenKeyID: issuer.tokenKey.truncatedKeyID, blindedMessage: request.blindedMessage))
        }
        #expect(throws: PrivacyPassError.wrongKeyID) {
            try issuer.issue(TokenRequest(truncatedTokenKeyID: issuer.tokenKey.truncatedKeyID &+ 1, blindedMessage: request.blindedMessage))
        }
        #expect(throws: PrivacyPassError.self) {
            try issuer.issue(TokenRequest(truncatedTokenKeyID: issuer.tokenKey.truncatedKeyID, blindedMessage: Array(request.blindedMessage.prefix(255))))
        }
        #expect(throws: PrivacyPassError.self) { try Token(deserialize: Array(token.serialize().prefix(353))) }
        #expect(throws: PrivacyPassError.self) { try TokenKey(spki: Array(issuer.tokenKey.spki.dropLast())) }
        #expect(Base64URL.decode("a+b/") == nil)
        #expect(Base64URL.decode(Base64URL.encode([0xfb, 0xff, 0x01])) == [0xfb, 0xff, 0x01])
    }
}

