import Crypto
import Foundation

/// The gateway's side of Oblivious HTTP (RFC 9458 §4.3, §4.4): opens an encapsulated request with one of its
/// keys and seals the response to it. It does no I/O; `LookupService` carries the messages over HTTP.
public struct OHTTPGateway: Sendable {
    /// Keys held, by identifier (several during a rotation).
    public let keys: [OHTTPGatewayKey]
    /// Largest encapsulated request accepted.
    public let maxRequestBytes: Int

    /// A gateway over `keys` (identifiers must be distinct).
    public init(keys: [OHTTPGatewayKey], maxRequestBytes: Int = 16 << 20) throws {
        guard Set(keys.map(\.keyID)).count == keys.count else { throw OHTTPError(.invalidKeyConfig, "two gateway keys share an identifier") }
        self.keys = keys
        self.maxRequestBytes = maxRequestBytes
    }

    /// The key configurations to publish (`application/ohttp-keys`).
    public var publishedConfigs: [UInt8] { OHTTPKeyConfig.encodeList(keys.map(\.config)) }

    /// Bytes before the ciphertext: key id, KEM, KDF, AEAD, and the X25519 encapsulated key.
    static let headerBytes = 7
    static let encBytes = 32

    /// Opens an encapsulated request: its Binary HTTP bytes and the context that seals the response.
    public func decapsulate(_ message: [UInt8]) throws -> OHTTPOpenedRequest {
        guard message.count <= maxRequestBytes else { throw OHTTPError(.messageTooLarge, "an encapsulated request of \(message.count) bytes") }
        guard message.count >= Self.headerBytes else { throw OHTTPError(.invalidMessage, "shorter than the request header") }
        let header = Array(message[0..<Self.headerBytes])
        func uint16(_ at: Int) -> UInt16 { UInt16(header[at]) << 8 | UInt16(header[at + 1]) }
        guard let key = keys.first(where: { $0.keyID == header[0] }) else { throw OHTTPError(.unknownKeyID, "key identifier \(header[0])") }
        let suite = OHTTPSuite(kem: uint16(1), kdf: uint16(3), aead: uint16(5))
        guard key.suites.contains(suite) else { throw OHTTPError(.unsupportedCipherSuite, "the key does not offer this suite") }
        guard message.count >= Self.headerBytes + Self.encBytes + 16 else { throw OHTTPError(.invalidMessage, "shorter than its key and tag") }
        let enc = Array(message[Self.headerBytes..<Self.headerBytes + Self.encBytes])
        let ciphertext = message[(Self.headerBytes + Self.encBytes)...]
        do {
            var recipient = try HPKE.Recipient(privateKey: key.privateKey, ciphersuite: try suite.hpke(),
                                               info: OHTTPResponseKeys.requestInfo(header: header), encapsulatedKey: Data(enc))
            let request = try recipient.open(ciphertext)
            let secret = try recipient.exportSecret(context: OHTTPResponseKeys.exportLabel, outputByteCount: OHTTPResponseKeys.secretBytes(suite))
            return OHTTPOpenedRequest(request: Array(request), context: OHTTPResponseContext(secret: secret, enc: enc, suite: suite))
        } catch let error as OHTTPError {
            throw error
        } catch {
            throw OHTTPError(.decryptionFailed, "the request does not open")
        }
    }
}

/// A request the gateway opened: its Binary HTTP bytes, and how to seal the answer.
public struct OHTTPOpenedRequest: Sendable {
    /// The Binary HTTP request.
    public let request: [UInt8]
    /// Seals the response to this request.
    public let context: OHTTPResponseContext
}

/// What seals the response to one request: the secret exported from its HPKE context and its encapsulated key.
public struct OHTTPResponseContext: Sendable {
    let secret: SymmetricKey
    let enc: [UInt8]
    let suite: OHTTPSuite

    /// The request's HPKE encapsulated key: fresh for every request, so a repeated one marks a replay.
    public var encapsulatedKey: [UInt8] { enc }

    /// `response_nonce ‖ AEAD(response)`. `nonce` is random unless given (known-answer tests give the RFC's).
    public func encapsulate(_ response: [UInt8], nonce: [UInt8]? = nil) throws -> [UInt8] {
        let size = OHTTPResponseKeys.secretBytes(suite)
        // One draw from swift-crypto's generator: byte by byte from the system generator was a `getrandom` call a
        // byte, sixteen system calls for every answer the gateway seals, refusals included.
        let responseNonce = nonce ?? SymmetricKey(size: SymmetricKeySize(bitCount: size * 8)).withUnsafeBytes { Array($0) }
        guard responseNonce.count == size else { throw OHTTPError(.invalidMessage, "a response nonce of \(responseNonce.count) bytes") }
        let keys = OHTTPResponseKeys.derive(secret: secret, enc: enc, responseNonce: responseNonce, suite: suite)
        return responseNonce + (try suite.seal(response, key: keys.key, nonce: keys.nonce))
    }
}
