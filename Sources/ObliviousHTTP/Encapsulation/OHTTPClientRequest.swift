import Crypto
import Foundation

/// The client's side of Oblivious HTTP (RFC 9458 §4.3, §4.4): encapsulates a Binary HTTP request to a gateway's
/// key configuration and opens the response. What a device (and the tests and tools here) do.
public struct OHTTPClientRequest: Sendable {
    /// The encapsulated request (`message/ohttp-req`).
    public let encapsulated: [UInt8]
    private let secret: SymmetricKey
    private let enc: [UInt8]
    private let suite: OHTTPSuite

    /// Encapsulates `request` to `config` with `suite` (default: the configuration's first supported one).
    public init(_ request: [UInt8], config: OHTTPKeyConfig, suite: OHTTPSuite? = nil) throws {
        guard let suite = suite ?? config.suites.first(where: \.isSupported), config.suites.contains(suite) else {
            throw OHTTPError(.unsupportedCipherSuite, "the key configuration offers no suite this client supports")
        }
        let header: [UInt8] = [config.keyID, UInt8(suite.kem >> 8), UInt8(suite.kem & 0xFF), UInt8(suite.kdf >> 8), UInt8(suite.kdf & 0xFF),
                               UInt8(suite.aead >> 8), UInt8(suite.aead & 0xFF)]
        let publicKey: Curve25519.KeyAgreement.PublicKey
        do { publicKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: config.publicKey) } catch {
            throw OHTTPError(.invalidKeyConfig, "the public key is not an X25519 key")
        }
        var sender = try HPKE.Sender(recipientKey: publicKey, ciphersuite: try suite.hpke(), info: OHTTPResponseKeys.requestInfo(header: header))
        let ciphertext = try sender.seal(request)
        enc = Array(sender.encapsulatedKey)
        encapsulated = header + enc + Array(ciphertext)
        secret = try sender.exportSecret(context: OHTTPResponseKeys.exportLabel, outputByteCount: OHTTPResponseKeys.secretBytes(suite))
        self.suite = suite
    }

    /// Opens the gateway's answer (`message/ohttp-res`) to this request.
    public func openResponse(_ response: [UInt8]) throws -> [UInt8] {
        let size = OHTTPResponseKeys.secretBytes(suite)
        guard response.count >= size + 16 else { throw OHTTPError(.invalidMessage, "shorter than a response nonce and tag") }
        let keys = OHTTPResponseKeys.derive(secret: secret, enc: enc, responseNonce: Array(response[0..<size]), suite: suite)
        return try suite.open(Array(response[size...]), key: keys.key, nonce: keys.nonce)
    }
}
